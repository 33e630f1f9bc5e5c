package cell

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/standin/simprovider"
)

func init() {
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
}

// scaleTo sets spec.replicas through the scale subresource, as kubectl
// scale and an autoscaler do.
func scaleTo(t *testing.T, wd *computev1alpha.WorkloadDeployment, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	if err := k8s.SubResource("scale").Patch(context.Background(), wd.DeepCopy(), patch); err != nil {
		t.Fatalf("failed to scale %s to %d: %v", wd.Name, n, err)
	}
}

func TestParallelScalesUpAndDown(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(5).create(t)

	g.Eventually(func(g Gomega) { expectConverged(g, wd, 5) }).Should(Succeed())
	got := getWD(g, wd)
	insts := instancesIn(g, ns)
	g.Expect(names(insts)).To(Equal([]string{"web-0", "web-1", "web-2", "web-3", "web-4"}))
	for i, inst := range insts {
		g.Expect(inst.Labels).To(Equal(map[string]string{
			"app":                                      "web",
			computev1alpha.WorkloadUIDLabel:            "workload-web",
			computev1alpha.WorkloadNameLabel:           "web",
			computev1alpha.WorkloadDeploymentUIDLabel:  string(got.UID),
			computev1alpha.WorkloadDeploymentNameLabel: "web",
			computev1alpha.CityCodeLabel:               "DFW",
			computev1alpha.PlacementNameLabel:          "default",
			computev1alpha.InstanceIndexLabel:          fmt.Sprint(i),
		}), inst.Name)
		g.Expect(metav1.GetControllerOf(&inst).UID).To(Equal(got.UID))
		g.Expect(inst.Spec.Controller.TemplateHash).To(Equal(got.Status.TemplateHash))
		g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty(), "the Quota gate is released")
		g.Expect(inst.Finalizers).To(ConsistOf(simprovider.Finalizer))
		quota := condition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
		g.Expect(quota.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(quota.Reason).To(Equal(computev1alpha.ReasonQuotaDisabled))
		g.Expect(quota.ObservedGeneration).To(Equal(inst.Generation))
		g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Reason).To(Equal(computev1alpha.ReasonAvailable))
		g.Expect(inst.Status.Controller.ObservedTemplateHash).To(Equal(got.Status.TemplateHash))
		g.Expect(inst.Status.NetworkInterfaces).To(HaveLen(1))
		g.Expect(*inst.Status.NetworkInterfaces[0].Assignments.NetworkIP).To(HavePrefix("10.40."))
		g.Expect(*inst.Status.NetworkInterfaces[0].Assignments.ExternalIP).To(HavePrefix("203.0.113."))
	}
	g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAvailable).Reason).To(Equal(computev1alpha.ReasonReplicasAvailable))
	g.Expect(got.Status.Selector).To(Equal(computev1alpha.WorkloadDeploymentUIDLabel + "=" + string(got.UID)))

	kept := uids(insts[:2])
	scaleTo(t, wd, 2)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())
	g.Expect(uids(instancesIn(g, ns))).To(Equal(kept), "the lowest ordinals stay")
}

func TestParallelScalesToZeroAndBack(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(2).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())

	scaleTo(t, wd, 0)
	g.Eventually(func(g Gomega) {
		got := expectConverged(g, wd, 0)
		available := condition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(available.Reason).To(Equal(computev1alpha.ReasonNoReplicasDesired))
	}).Should(Succeed())

	scaleTo(t, wd, 3)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())
}

func TestOrderedReadyCreatesEachInstanceAfterThePreviousIsReady(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	events := watchInstances(t, ns)
	wd := makeWD(ns, "web").replicas(4).create(t)

	g.Eventually(func(g Gomega) { expectConverged(g, wd, 4) }).Should(Succeed())
	g.Expect(events.replay(func(ev watch.Event, state map[string]*computev1alpha.Instance) error {
		created := ev.Object.(*computev1alpha.Instance)
		if ev.Type != watch.Added {
			return nil
		}
		for _, other := range state {
			if ordinal(other) < ordinal(created) && !isReady(other) {
				return fmt.Errorf("%s was created while %s was not Ready", created.Name, other.Name)
			}
		}
		if n := len(state); n != ordinal(created)+1 {
			return fmt.Errorf("%s was created with %d instances in place", created.Name, n-1)
		}
		return nil
	})).To(Succeed())
}

func TestOrderedReadyScalesDownFromTheHighestOrdinalOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").replicas(4).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 4) }).Should(Succeed())

	events := watchInstances(t, ns)
	kept := uids(instancesIn(g, ns)[:1])
	scaleTo(t, wd, 1)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 1) }).Should(Succeed())
	g.Expect(uids(instancesIn(g, ns))).To(Equal(kept))

	// A removal starts only once every higher ordinal is gone.
	terminating := map[string]bool{}
	g.Expect(events.replay(func(ev watch.Event, state map[string]*computev1alpha.Instance) error {
		inst := ev.Object.(*computev1alpha.Instance)
		if ev.Type == watch.Deleted || inst.DeletionTimestamp == nil || terminating[inst.Name] {
			return nil
		}
		terminating[inst.Name] = true
		for _, other := range state {
			if ordinal(other) > ordinal(inst) {
				return fmt.Errorf("%s started terminating while %s still existed", inst.Name, other.Name)
			}
		}
		return nil
	})).To(Succeed())
	g.Expect(terminating).To(HaveLen(3))
}

func TestOrderedReadyScalesUpFromAnExistingInstance(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 1) }).Should(Succeed())
	first := uids(instancesIn(g, ns))

	scaleTo(t, wd, 3)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())
	g.Expect(uids(instancesIn(g, ns))).To(HaveKeyWithValue("web-0", first["web-0"]))
}

func TestSpecReplicasOverridesMinReplicas(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	b := makeWD(ns, "web").parallel()
	b.wd.Spec.ScaleSettings.MinReplicas = 3
	wd := b.create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())

	scaleTo(t, wd, 1)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 1) }).Should(Succeed())
	g.Expect(getWD(g, wd).Spec.Replicas).To(Equal(ptr.To[int32](1)))
}
