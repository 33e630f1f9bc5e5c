//go:build e2e

package compute

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/e2e/internal/fixture"
)

// Bounds for waiting. The simulated provider takes 2 s per Instance and
// OrderedReady creates them one after the other, so a few replicas take
// several seconds; propagation itself is sub-second.
const (
	chainWait = 90 * time.Second
	poll      = 200 * time.Millisecond
)

// projectNamespace is a project namespace of one test: labelled with the
// platform's project and bound to every city, like "default". Deleting it
// at the end deletes whatever the test left.
type projectNamespace struct {
	// name is the project namespace.
	name string
	// hub is the federation namespace compute maps it to.
	hub string
}

// newProjectNamespace creates the namespace of a test, bound to every city.
func newProjectNamespace(t *testing.T) projectNamespace {
	t.Helper()
	name, hub := fixture.ProjectNamespace(t, project, cities)
	return projectNamespace{name: name, hub: hub}
}

// workloadBuilder builds Workloads.
type workloadBuilder struct{ w *computev1alpha.Workload }

// makeWorkload returns a Workload of one container and no placement.
func makeWorkload(ns, name string) *workloadBuilder {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
		}}},
	}
	return &workloadBuilder{w: w}
}

// withPlacement adds a placement of min replicas in every city.
func (b *workloadBuilder) withPlacement(name string, min int32, cityCodes ...string) *workloadBuilder {
	b.w.Spec.Placements = append(b.w.Spec.Placements, computev1alpha.WorkloadPlacement{
		Name: name, CityCodes: cityCodes, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: min},
	})
	return b
}

// create creates the Workload.
func (b *workloadBuilder) create(t *testing.T) *computev1alpha.Workload {
	t.Helper()
	if err := project.Create(t.Context(), b.w); err != nil {
		t.Fatalf("failed to create Workload %s: %v", b.w.Name, err)
	}
	return b.w
}

// counts are the replica counts a user reads on a Workload.
type counts struct {
	deployments, replicas, ready, desired, updated int32
}

// expectAvailable waits until the Workload reports Available with want
// counts, for its latest generation, and returns it.
func expectAvailable(t *testing.T, w *computev1alpha.Workload, want counts) *computev1alpha.Workload {
	t.Helper()
	return expectAvailableWithin(t, w, want, chainWait)
}

// expectAvailableWithin is expectAvailable with its own bound.
func expectAvailableWithin(t *testing.T, w *computev1alpha.Workload, want counts, bound time.Duration) *computev1alpha.Workload {
	t.Helper()
	got := &computev1alpha.Workload{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(project.Get(t.Context(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		st := got.Status
		g.Expect(st.ObservedGeneration).To(Equal(got.Generation), "observedGeneration")
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue(), "Available: %+v", st.Conditions)
		g.Expect(counts{st.Deployments, st.Replicas, st.ReadyReplicas, st.DesiredReplicas, st.UpdatedReplicas}).To(Equal(want))
	}).WithTimeout(bound).WithPolling(poll).Should(Succeed())
	return got
}

// updateWorkload applies change to the latest Workload, retrying conflicts.
func updateWorkload(t *testing.T, w *computev1alpha.Workload, change func(*computev1alpha.Workload)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &computev1alpha.Workload{}
		if err := project.Get(t.Context(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		change(cur)
		return project.Update(t.Context(), cur)
	}).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// deploymentsOf lists the project WorkloadDeployments of a Workload.
func deploymentsOf(g Gomega, w *computev1alpha.Workload) []computev1alpha.WorkloadDeployment {
	list := &computev1alpha.WorkloadDeploymentList{}
	g.Expect(project.List(context.Background(), list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)})).To(Succeed())
	return list.Items
}

// instancesIn lists the Instances of a deployment in a plane's namespace.
func instancesIn(g Gomega, c client.Client, namespace, deployment string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: deployment})).To(Succeed())
	slices.SortFunc(list.Items, func(a, b computev1alpha.Instance) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// policyNames lists the PropagationPolicies of a hub namespace.
func policyNames(g Gomega, hubNamespace string) []string {
	list := &policyv1alpha1.PropagationPolicyList{}
	g.Expect(hub.List(context.Background(), list, client.InNamespace(hubNamespace))).To(Succeed())
	out := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// ready reports an Instance's Ready condition.
func ready(inst *computev1alpha.Instance) bool {
	return meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady)
}

// ordinals returns the instance-index labels of instances, sorted.
func ordinals(instances []computev1alpha.Instance) []string {
	out := make([]string, 0, len(instances))
	for _, i := range instances {
		out = append(out, i.Labels[computev1alpha.InstanceIndexLabel])
	}
	slices.Sort(out)
	return out
}

// seq returns "0".."n-1".
func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}

// cityOf returns the placement status of city in a Workload's placement.
func cityOf(w *computev1alpha.Workload, placement, city string) *computev1alpha.WorkloadCityStatus {
	for i := range w.Status.Placements {
		p := &w.Status.Placements[i]
		if p.Name != placement {
			continue
		}
		for j := range p.Cities {
			if p.Cities[j].CityCode == city {
				return &p.Cities[j]
			}
		}
	}
	return nil
}
