package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func TestStatusSubresource(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		gvr      schema.GroupVersionResource
		manifest func() string
	}{
		"workload":            {workloadsGVR, workloadYAML},
		"workload deployment": {deploymentsGVR, deploymentYAML},
		"instance":            {instancesGVR, instanceYAML},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res := dyn.Resource(tc.gvr).Namespace("default")
			created, err := res.Create(ctx, object(t, tc.manifest()), metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())

			// A status written through the main resource is dropped.
			set("status", map[string]any{"conditions": []any{readyCondition()}})(t, created.Object)
			updated, err := res.Update(ctx, created, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			_, found, _ := unstructured.NestedSlice(updated.Object, "status", "conditions")
			g.Expect(found).To(BeFalse(), "status must only be writable through /status")

			// A status written through /status is kept, and bumps no generation.
			set("status", map[string]any{"conditions": []any{readyCondition()}})(t, updated.Object)
			withStatus, err := res.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			conds, _, _ := unstructured.NestedSlice(withStatus.Object, "status", "conditions")
			g.Expect(conds).To(HaveLen(1))
			g.Expect(withStatus.GetGeneration()).To(Equal(created.GetGeneration()))
		})
	}
}

func readyCondition() map[string]any {
	return map[string]any{
		"type": "Ready", "status": "True", "reason": "Available", "message": "serving",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": int64(1),
	}
}

func TestScaleSubresource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	res := dyn.Resource(deploymentsGVR).Namespace("default")
	// The scale subresource of a custom resource needs its spec path to
	// exist: a WorkloadDeployment without spec.replicas cannot be scaled
	// through it (the apiserver answers 500), so set it as a scaler would.
	created, err := res.Create(ctx, object(t, deploymentYAML(), set("spec.replicas", int64(2))), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	name := created.GetName()

	set("status", map[string]any{"replicas": int64(2), "currentReplicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "desiredReplicas": int64(2), "selector": "compute.datumapis.com/workload-deployment-uid=" + string(created.GetUID())})(t, created.Object)
	_, err = res.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	scaleObj, err := res.Get(ctx, name, metav1.GetOptions{}, "scale")
	g.Expect(err).NotTo(HaveOccurred())
	scale := toScale(t, scaleObj)
	g.Expect(scale.Status.Replicas).To(Equal(int32(2)))
	g.Expect(scale.Status.Selector).To(Equal("compute.datumapis.com/workload-deployment-uid=" + string(created.GetUID())))

	scale.Spec.Replicas = 5
	raw, err := json.Marshal(scale)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	g.Expect(json.Unmarshal(raw, &u.Object)).To(Succeed())
	_, err = res.Update(ctx, u, metav1.UpdateOptions{}, "scale")
	g.Expect(err).NotTo(HaveOccurred())

	got, err := res.Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	replicas, found, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
	g.Expect(found).To(BeTrue())
	g.Expect(replicas).To(Equal(int64(5)))
}

func toScale(t *testing.T, u *unstructured.Unstructured) *autoscalingv1.Scale {
	t.Helper()
	raw, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	s := &autoscalingv1.Scale{}
	if err := json.Unmarshal(raw, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPrintColumns(t *testing.T) {
	tests := map[string]struct {
		resource string
		want     []string
	}{
		"workloads show the health, availability, every replica count and the rollout phase": {
			resource: "workloads",
			want:     []string{"Name", "Health", "Available", "Reason", "Deployments", "Replicas", "Ready", "Desired", "Up-to-date", "Rollout", "Age"},
		},
		"workload deployments show their city": {
			resource: "workloaddeployments",
			want:     []string{"Name", "City", "Placement", "Workload", "Available", "Reason", "Replicas", "Ready", "Desired", "Up-to-date", "Age"},
		},
		"instances show readiness, city and quota": {
			resource: "instances",
			want:     []string{"Name", "Ready", "Reason", "City", "Workload", "Quota", "Network IP", "Age"},
		},
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			url := fmt.Sprintf("%s/apis/compute.datumapis.com/v1alpha/namespaces/default/%s", cfg.Host, tc.resource)
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
			}
			table := metav1.Table{}
			if err := json.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range table.ColumnDefinitions {
				got = append(got, c.Name)
			}
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

func TestOwnerReferencesAreGarbageCollected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	owner, err := dyn.Resource(workloadsGVR).Namespace("default").Create(ctx, object(t, workloadYAML()), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	dependent := object(t, deploymentYAML())
	dependent.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: "compute.datumapis.com/v1alpha", Kind: "Workload", Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}})
	dependent, err = dyn.Resource(deploymentsGVR).Namespace("default").Create(ctx, dependent, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(dyn.Resource(workloadsGVR).Namespace("default").Delete(ctx, owner.GetName(), metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})).To(Succeed())
	g.Eventually(func() bool {
		_, err := dyn.Resource(deploymentsGVR).Namespace("default").Get(ctx, dependent.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "the garbage collector must delete the dependent WorkloadDeployment")
}
