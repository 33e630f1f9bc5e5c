package cell

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/standin/simprovider"
)

// annotateInstance sets (or, with an empty value, removes) the simulated
// provider's failure annotation on one Instance.
func annotateInstance(t *testing.T, ns, name, failure string) {
	t.Helper()
	value := "null"
	if failure != "" {
		value = fmt.Sprintf("%q", failure)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, simprovider.FailAnnotation, value)
	inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(context.Background(), inst, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("failed to annotate %s: %v", name, err)
	}
}

// expectWarning asserts that a Warning event with reason was emitted about
// an object.
func expectWarning(g Gomega, ns, about, reason string) {
	list := &eventsv1.EventList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	found := false
	for _, e := range list.Items {
		if e.Regarding.Name == about && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			found = true
		}
	}
	g.Expect(found).To(BeTrue(), "no Warning %s event about %s", reason, about)
}

func TestProviderFailuresShowAsTheDeploymentsAvailableReason(t *testing.T) {
	tests := map[string]struct {
		failure     string
		wantMessage string
	}{
		"an image that cannot be pulled": {
			failure:     computev1alpha.ReasonImageUnavailable,
			wantMessage: `instance web-0: failed to pull image "ghcr.io/citycells/hello:1.0"`,
		},
		"a workload that keeps crashing": {
			failure:     computev1alpha.ReasonInstanceCrashing,
			wantMessage: `instance web-0: container "app" exited with code 1`,
		},
		"a configuration the runtime rejects": {
			failure:     computev1alpha.ReasonConfigurationError,
			wantMessage: "instance web-0: the runtime rejected the instance configuration",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			wd := makeWD(ns, "web").replicas(2).templateAnnotation(simprovider.FailAnnotation, tc.failure).create(t)

			g.Eventually(func(g Gomega) {
				got := getWD(g, wd)
				available := condition(got.Status.Conditions, computev1alpha.ConditionAvailable)
				g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(available.Reason).To(Equal(tc.failure))
				g.Expect(available.Message).To(HavePrefix(tc.wantMessage))
				g.Expect(got.Status.ReadyReplicas).To(BeZero())
				// OrderedReady waits for web-0, which never gets Ready.
				g.Expect(names(instancesIn(g, ns))).To(Equal([]string{"web-0"}))
				inst := instancesIn(g, ns)[0]
				g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Reason).To(Equal(tc.failure))
				expectWarning(g, ns, "web-0", tc.failure)
			}).Should(Succeed())
		})
	}
}

func TestTheWorstReasonAcrossInstancesWins(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(2).templateAnnotation(simprovider.FailAnnotation, computev1alpha.ReasonInstanceCrashing).create(t)
	g.Eventually(func(g Gomega) {
		available := condition(getWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available.Reason).To(Equal(computev1alpha.ReasonInstanceCrashing))
		g.Expect(available.Message).To(HavePrefix("2 instances report InstanceCrashing; instance web-0: "))
	}).Should(Succeed())

	// An image that cannot be pulled is worse than a crash: the user must
	// fix the reference before anything can even start.
	annotateInstance(t, ns, "web-1", computev1alpha.ReasonImageUnavailable)
	g.Eventually(func(g Gomega) {
		available := condition(getWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available.Reason).To(Equal(computev1alpha.ReasonImageUnavailable))
		g.Expect(available.Message).To(HavePrefix("instance web-1: failed to pull image"))
	}).Should(Succeed())
}

func TestReadyReturnsToFalseWhenAnInstanceStopsBeingAvailable(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 1) }).Should(Succeed())

	annotateInstance(t, ns, "web-0", computev1alpha.ReasonInstanceCrashing)
	g.Eventually(func(g Gomega) {
		inst := instancesIn(g, ns)[0]
		ready := condition(inst.Status.Conditions, computev1alpha.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(computev1alpha.ReasonInstanceCrashing))
		got := getWD(g, wd)
		g.Expect(got.Status.ReadyReplicas).To(BeZero())
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAvailable).Reason).To(Equal(computev1alpha.ReasonInstanceCrashing))
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionReplicasReady).Status).To(Equal(metav1.ConditionFalse))
		expectWarning(g, ns, "web-0", computev1alpha.ReasonInstanceCrashing)
	}).Should(Succeed())

	annotateInstance(t, ns, "web-0", "")
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 1) }).Should(Succeed())
}

func TestAQuietDeploymentCausesNoWrites(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(3).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())

	// Let the writes that converged it (and their events) land.
	last := -1
	g.Eventually(func() bool {
		n := writes.in(ns)
		settled := n == last
		last = n
		return settled
	}).WithPolling(time.Second).Should(BeTrue())

	versions := func(g Gomega) map[string]string {
		out := map[string]string{"wd": getWD(g, wd).ResourceVersion}
		for _, i := range instancesIn(g, ns) {
			out[i.Name] = i.ResourceVersion
		}
		return out
	}
	before := versions(g)
	g.Consistently(func(g Gomega) {
		g.Expect(writes.in(ns)).To(Equal(last), "writes by the manager in the namespace")
		g.Expect(versions(g)).To(Equal(before))
	}).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

func TestADeletedDeploymentLeavesNoInstances(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(3).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())

	g.Expect(k8s.Delete(context.Background(), wd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(wd), &computev1alpha.WorkloadDeployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deployment is gone")
		g.Expect(instancesIn(g, ns)).To(BeEmpty())
	}).Should(Succeed())
}

func TestADeploymentRecreatedUnderTheSameNameGetsItsInstances(t *testing.T) {
	// Karmada recreates a cell's WorkloadDeployment when its hub copy is
	// deleted and comes back: the new deployment has the old one's name,
	// and the old one's Instances, still being removed, hold the names of
	// its slots.
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	old := makeWD(ns, "web").parallel().replicas(2).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, old, 2) }).Should(Succeed())

	const hold = "test.compute.datumapis.com/hold"
	for _, inst := range instancesIn(g, ns) {
		patch := client.MergeFrom(inst.DeepCopy())
		inst.Finalizers = append(inst.Finalizers, hold)
		g.Expect(k8s.Patch(ctx, &inst, patch)).To(Succeed())
	}
	g.Expect(k8s.Delete(ctx, old)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(old), &computev1alpha.WorkloadDeployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old deployment is gone")
		for _, inst := range instancesIn(g, ns) {
			g.Expect(inst.DeletionTimestamp).NotTo(BeNil(), "the garbage collector is removing %s", inst.Name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())

	recreated := makeWD(ns, "web").parallel().replicas(2).create(t)
	t.Log("the new deployment tries its slots while the old Instances still hold their names")
	g.Eventually(func(g Gomega) {
		g.Expect(getWD(g, recreated).Status.Conditions).NotTo(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	time.Sleep(time.Second)

	t.Log("the old Instances go; the new deployment creates its own at once, without waiting for a resync")
	// The controllers remove their own finalizers from the old Instances
	// meanwhile: a merge patch replaces the whole list, so each removal is
	// guarded by the resourceVersion it was computed from and retried, or
	// it could put back a finalizer its owner already removed.
	g.Eventually(func(g Gomega) {
		for _, inst := range instancesIn(g, ns) {
			if !slices.Contains(inst.Finalizers, hold) {
				continue
			}
			patch := client.MergeFromWithOptions(inst.DeepCopy(), client.MergeFromWithOptimisticLock{})
			inst.Finalizers = slices.DeleteFunc(inst.Finalizers, func(f string) bool { return f == hold })
			g.Expect(k8s.Patch(ctx, &inst, patch)).To(Succeed())
		}
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := expectConverged(g, recreated, 2)
		for _, inst := range instancesIn(g, ns) {
			g.Expect(metav1.GetControllerOf(&inst).UID).To(Equal(got.UID), "Instance %s belongs to the new deployment", inst.Name)
		}
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// A new revision that fails while older Instances still serve keeps the
// deployment Available; ReplicasReady names the failure, so that a rollout
// across cities halts on it at once.
func TestAFailingNewRevisionShowsOnReplicasReadyWhileOldInstancesServe(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").replicas(2).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())

	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
		simprovider.FailAnnotation, computev1alpha.ReasonImageUnavailable)
	if err := k8s.Patch(context.Background(), wd.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("failed to change the template: %v", err)
	}
	g.Eventually(func(g Gomega) {
		got := getWD(g, wd)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.ReadyReplicas).To(Equal(int32(1)), "web-0, still at the old template, serves")
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		rr := condition(got.Status.Conditions, computev1alpha.ConditionReplicasReady)
		g.Expect(rr.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(rr.Reason).To(Equal(computev1alpha.ReasonImageUnavailable))
		g.Expect(rr.Message).To(ContainSubstring("instance web-1: failed to pull image"))
	}).Should(Succeed())
}
