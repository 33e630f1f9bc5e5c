//go:build e2e

package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
)

// Bounds for waiting on Karmada; propagation itself takes ~0.1 s.
const (
	propagationWait = 30 * time.Second
	healthWait      = 90 * time.Second
	poll            = 100 * time.Millisecond
)

var cityLabel = computev1alpha.CityCodeTopologyLabel

func TestConfigMapReachesOnlyTheCellOfItsCity(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := hubNamespace(t)
	createCityPolicy(t, ns, "DFW", "v1", "ConfigMap")

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "greeting", Namespace: ns, Labels: map[string]string{cityLabel: "DFW"}},
		Data:       map[string]string{"hello": "dfw"},
	}
	g.Expect(hub.Create(ctx, cm)).To(Succeed())

	t.Log("the ConfigMap appears in DFW's cell")
	g.Eventually(func(g Gomega) {
		got := &corev1.ConfigMap{}
		g.Expect(cells["DFW"].Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		g.Expect(got.Data).To(Equal(cm.Data))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())

	t.Log("Karmada scheduled it to DFW alone, and no other cell has it")
	expectScheduledOnlyTo(g, ns, "ConfigMap", cm.Name, platform.CellPlane("DFW"))
	for city, c := range cells {
		if city == "DFW" {
			continue
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap in %s: %v", city, err)
	}

	t.Log("deleting it in the hub removes it from DFW")
	g.Expect(hub.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cells["DFW"].Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(BeTrue())
}

func TestWorkloadDeploymentStatusFlowsBackThroughTheInterpreter(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := hubNamespace(t)
	createCityPolicy(t, ns, "LHR", computev1alpha.GroupVersion.String(), "WorkloadDeployment")

	wd := makeWD(ns, "web", "LHR")
	g.Expect(hub.Create(ctx, wd)).To(Succeed())
	key := client.ObjectKeyFromObject(wd)

	t.Log("the WorkloadDeployment reaches LHR's cell only")
	member := &computev1alpha.WorkloadDeployment{}
	g.Eventually(func() error { return cells["LHR"].Get(ctx, key, member) }).
		WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())
	g.Expect(member.Spec.CityCode).To(Equal("LHR"))
	expectScheduledOnlyTo(g, ns, "WorkloadDeployment", wd.Name, platform.CellPlane("LHR"))
	for city, c := range cells {
		if city != "LHR" {
			err := c.Get(ctx, key, &computev1alpha.WorkloadDeployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "WorkloadDeployment in %s: %v", city, err)
		}
	}

	t.Log("the cell reports two ready replicas; the hub copy shows them")
	setMemberStatus(g, "LHR", key, 2, metav1.ConditionTrue, "Available")
	g.Eventually(func(g Gomega) {
		got := &computev1alpha.WorkloadDeployment{}
		g.Expect(hub.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(got.Status.Replicas).To(Equal(int32(2)))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		available := meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available).NotTo(BeNil())
		g.Expect(available.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())

	t.Log("scaling the hub copy: its observedGeneration waits for the cell to observe the new spec")
	hubWD := &computev1alpha.WorkloadDeployment{}
	g.Expect(hub.Get(ctx, key, hubWD)).To(Succeed())
	before := hubWD.Generation
	hubWD.Spec.Replicas = ptr.To[int32](3)
	g.Expect(hub.Update(ctx, hubWD)).To(Succeed())
	g.Expect(hubWD.Generation).To(BeNumerically(">", before))
	g.Eventually(func(g Gomega) {
		g.Expect(cells["LHR"].Get(ctx, key, member)).To(Succeed())
		g.Expect(member.Spec.Replicas).To(Equal(ptr.To[int32](3)))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())
	// Karmada has reflected the member's new generation once the binding
	// carries it; the aggregate must not claim the new generation yet.
	g.Eventually(func(g Gomega) {
		g.Expect(reflectedGeneration(g, ns, wd.Name)).To(Equal(member.Generation))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())
	g.Expect(hub.Get(ctx, key, hubWD)).To(Succeed())
	g.Expect(hubWD.Status.ObservedGeneration).To(Equal(before), "observedGeneration advanced before the cell observed the change")

	t.Log("the cell observes the new spec and reports a blocking reason; the hub copy follows")
	setMemberStatus(g, "LHR", key, 3, metav1.ConditionFalse, "PendingQuota")
	g.Eventually(func(g Gomega) {
		got := &computev1alpha.WorkloadDeployment{}
		g.Expect(hub.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.DesiredReplicas).To(Equal(int32(3)))
		available := meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available).NotTo(BeNil())
		g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(available.Reason).To(Equal("PendingQuota"))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())

	t.Log("deleting the hub copy removes it from the cell")
	g.Expect(hub.Delete(ctx, hubWD)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cells["LHR"].Get(ctx, key, &computev1alpha.WorkloadDeployment{}))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(BeTrue())
}

func TestClusterFollowsItsCellApiserverDownAndUp(t *testing.T) {
	g := NewWithT(t)
	const city = "SIN"
	name := platform.CellPlane(city)
	env := local.Environment()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			// Leave the platform whole for the tests after this one.
			if err := env.StartAPIServer(context.Background(), name); err != nil {
				t.Logf("failed to restart %s: %v", name, err)
			}
		}
	})
	g.Expect(clusterReady(g, name)).To(BeTrue(), "cluster %s should start Ready", name)

	t.Logf("stopping the apiserver of %s makes its Cluster NotReady", name)
	g.Expect(env.StopAPIServer(name)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return clusterReady(g, name) }).
		WithTimeout(healthWait).WithPolling(poll).Should(BeFalse())

	t.Logf("starting it again makes the Cluster Ready")
	g.Expect(env.StartAPIServer(t.Context(), name)).To(Succeed())
	restarted = true
	g.Eventually(func(g Gomega) bool { return clusterReady(g, name) }).
		WithTimeout(healthWait).WithPolling(poll).Should(BeTrue())
}

// hubNamespace creates a namespace in the hub for one test and deletes it
// afterwards; Karmada propagates namespaces to every cell.
func hubNamespace(t *testing.T) string {
	t.Helper()
	name := "e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := hub.Create(t.Context(), ns); err != nil {
		t.Fatalf("failed to create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := hub.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("failed to delete namespace %s: %v", name, err)
		}
	})
	return name
}

// createCityPolicy propagates objects of a kind labelled with city to the
// Clusters labelled with the same city, as the federator does.
func createCityPolicy(t *testing.T, ns, city, apiVersion, kind string) {
	t.Helper()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{cityLabel: city}}
	policy := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "city-" + strings.ToLower(city), Namespace: ns},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: kind, LabelSelector: selector}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: selector}},
		},
	}
	if err := hub.Create(t.Context(), policy); err != nil {
		t.Fatalf("failed to create PropagationPolicy: %v", err)
	}
}

// binding returns the ResourceBinding of a resource template.
func binding(g Gomega, ns, kind, name string) *workv1alpha2.ResourceBinding {
	list := &workv1alpha2.ResourceBindingList{}
	g.Expect(hub.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		rb := &list.Items[i]
		if rb.Spec.Resource.Kind == kind && rb.Spec.Resource.Name == name {
			return rb
		}
	}
	g.Expect(fmt.Errorf("no ResourceBinding for %s %s/%s", kind, ns, name)).NotTo(HaveOccurred())
	return nil
}

// expectScheduledOnlyTo checks that Karmada scheduled a template to one
// cluster and applied it there.
func expectScheduledOnlyTo(g Gomega, ns, kind, name, cluster string) {
	g.Eventually(func(g Gomega) {
		rb := binding(g, ns, kind, name)
		var scheduled, applied []string
		for _, c := range rb.Spec.Clusters {
			scheduled = append(scheduled, c.Name)
		}
		for _, s := range rb.Status.AggregatedStatus {
			if s.Applied {
				applied = append(applied, s.ClusterName)
			}
		}
		g.Expect(scheduled).To(Equal([]string{cluster}))
		g.Expect(applied).To(Equal([]string{cluster}))
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())
}

// reflectedGeneration is the member generation Karmada reflected into the
// binding of a WorkloadDeployment (0 if none yet).
func reflectedGeneration(g Gomega, ns, name string) int64 {
	rb := binding(g, ns, "WorkloadDeployment", name)
	for _, s := range rb.Status.AggregatedStatus {
		if s.Status == nil {
			continue
		}
		var reflected struct {
			Generation int64 `json:"generation"`
		}
		g.Expect(json.Unmarshal(s.Status.Raw, &reflected)).To(Succeed())
		return reflected.Generation
	}
	return 0
}

// setMemberStatus writes the status a cell controller would write on the
// member copy: n replicas, all ready when available is True.
func setMemberStatus(g Gomega, city string, key types.NamespacedName, n int32, available metav1.ConditionStatus, reason string) {
	c := cells[city]
	g.Eventually(func() error {
		wd := &computev1alpha.WorkloadDeployment{}
		if err := c.Get(context.Background(), key, wd); err != nil {
			return err
		}
		ready := int32(0)
		if available == metav1.ConditionTrue {
			ready = n
		}
		wd.Status.ObservedGeneration = wd.Generation
		wd.Status.ReplicaCounts = computev1alpha.ReplicaCounts{
			Replicas: n, CurrentReplicas: ready, UpdatedReplicas: n, ReadyReplicas: ready, DesiredReplicas: n,
		}
		meta.SetStatusCondition(&wd.Status.Conditions, metav1.Condition{
			Type: computev1alpha.ConditionAvailable, Status: available, Reason: reason,
			Message: "set by the e2e test", ObservedGeneration: wd.Generation,
		})
		return c.Status().Update(context.Background(), wd)
	}).WithTimeout(propagationWait).WithPolling(poll).Should(Succeed())
}

// clusterReady reports a Karmada Cluster's Ready condition.
func clusterReady(g Gomega, name string) bool {
	cluster := &clusterv1alpha1.Cluster{}
	g.Expect(hub.Get(context.Background(), client.ObjectKey{Name: name}, cluster)).To(Succeed())
	return meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

// makeWD returns a WorkloadDeployment for city, labelled for its city
// policy, as the federator writes it into the hub.
func makeWD(ns, name, city string) *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{cityLabel: city}},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: name, UID: types.UID("workload-" + name)},
			PlacementName: "default",
			CityCode:      city,
			Template: computev1alpha.InstanceTemplateSpec{
				Metadata: computev1alpha.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec: computev1alpha.InstanceSpec{
					Runtime: computev1alpha.InstanceRuntimeSpec{
						Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
						Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
							Name: "app", Image: "ghcr.io/citycells/hello:1.0",
						}}},
					},
				},
			},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              2,
				InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
			},
		},
	}
}
