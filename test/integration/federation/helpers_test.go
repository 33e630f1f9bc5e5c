package federation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// Waits: every hop is one watch event away, so seconds are plenty; resync
// (hours) would never make it.
const (
	timeout  = 20 * time.Second
	interval = 100 * time.Millisecond
)

// newNamespace creates a project namespace for one test and returns it with
// the hub namespace compute maps it to.
func newNamespace(t *testing.T) (project, hub string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + strings.ToLower(rand.String(6))}}
	if err := projectClient.Create(t.Context(), ns); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := projectClient.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("failed to delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name, names.FederationNamespace(ns.UID)
}

// ensureNamespace creates a namespace in a plane if it does not exist yet,
// with labels.
func ensureNamespace(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("failed to create namespace %s: %v", name, err)
	}
}

// makeWD returns a project WorkloadDeployment of city with min replicas.
func makeWD(namespace, name, city string, min int32) *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			computev1alpha.WorkloadNameLabel:     "web",
			computev1alpha.CityCodeLabel:         city,
			computev1alpha.CityCodeTopologyLabel: city,
		}},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "web", UID: "workload-uid"},
			PlacementName: "edge",
			CityCode:      city,
			Template: computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{
				Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
					Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
						Name: "app", Image: "ghcr.io/citycells/hello:1.0",
					}}},
				},
			}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              min,
				InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
			},
		},
	}
}

// makeInstance returns Instance ordinal of deployment wd in namespace,
// labelled as the cell labels it.
func makeInstance(namespace string, wd *computev1alpha.WorkloadDeployment, ordinal string) *computev1alpha.Instance {
	return &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: wd.Name + "-" + ordinal, Labels: map[string]string{
			computev1alpha.WorkloadUIDLabel:            string(wd.Spec.WorkloadRef.UID),
			computev1alpha.WorkloadNameLabel:           wd.Spec.WorkloadRef.Name,
			computev1alpha.WorkloadDeploymentUIDLabel:  string(wd.UID),
			computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
			computev1alpha.InstanceIndexLabel:          ordinal,
			computev1alpha.CityCodeLabel:               wd.Spec.CityCode,
			computev1alpha.PlacementNameLabel:          wd.Spec.PlacementName,
		}},
		Spec: computev1alpha.InstanceSpec{
			Runtime:    wd.Spec.Template.Spec.Runtime,
			Controller: &computev1alpha.InstanceController{TemplateHash: "h1"},
		},
	}
}

// setReady writes an Instance's Ready condition, as the cell would.
func setReady(t *testing.T, c client.Client, inst *computev1alpha.Instance, status metav1.ConditionStatus, reason string) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func() error {
		cur := &computev1alpha.Instance{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(inst), cur); err != nil {
			return err
		}
		cur.Status.Conditions = []metav1.Condition{{
			Type: computev1alpha.ConditionReady, Status: status, Reason: reason, Message: "set by the test",
			LastTransitionTime: metav1.Now(), ObservedGeneration: cur.Generation,
		}}
		return c.Status().Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

// get reads an object, for Eventually.
func get(c client.Client, namespace, name string, obj client.Object) func() error {
	return func() error {
		return c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	}
}

// gone reports whether an object does not exist, for Eventually.
func gone(c client.Client, namespace, name string, obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj))
	}
}
