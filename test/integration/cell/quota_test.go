package cell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/standin/simprovider"
)

// fakeQuota is a quota backend whose decisions the tests set per
// namespace. An undecided namespace is pending evaluation.
type fakeQuota struct {
	mu        sync.Mutex
	decisions map[string]metav1.Condition
	released  map[string]int
	// orphaned namespaces answer Release with quota.ErrClaimOrphaned.
	orphaned map[string]bool
}

func newFakeQuota() *fakeQuota {
	return &fakeQuota{decisions: map[string]metav1.Condition{}, released: map[string]int{}, orphaned: map[string]bool{}}
}

// errUnreachable is what the fake returns for a QuotaBackendUnavailable
// decision.
var errUnreachable = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

// Evaluate returns the namespace's decision.
func (f *fakeQuota) Evaluate(_ context.Context, inst *computev1alpha.Instance) (metav1.Condition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.decisions[inst.Namespace]
	if !ok {
		return metav1.Condition{Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonPendingEvaluation, Message: "the claim has not been evaluated yet"}, nil
	}
	if c.Reason == computev1alpha.ReasonQuotaBackendUnavailable {
		return c, errUnreachable
	}
	return c, nil
}

// Release records that an Instance's claim was released, or fails with
// quota.ErrClaimOrphaned in an orphaned namespace.
func (f *fakeQuota) Release(_ context.Context, inst *computev1alpha.Instance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.orphaned[inst.Namespace] {
		return fmt.Errorf("%w: namespace %q has no %s label", quota.ErrClaimOrphaned, inst.Namespace, computev1alpha.UpstreamClusterNameLabel)
	}
	f.released[client.ObjectKeyFromObject(inst).String()]++
	return nil
}

// orphan makes the claims of a namespace unreleasable.
func (f *fakeQuota) orphan(ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orphaned[ns] = true
}

// decide sets the decision for a namespace.
func (f *fakeQuota) decide(ns string, s metav1.ConditionStatus, reason, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decisions[ns] = metav1.Condition{Status: s, Reason: reason, Message: msg}
}

// releases returns how often an Instance's claim was released.
func (f *fakeQuota) releases(ns, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released[ns+"/"+name]
}

// quotaNamespace creates a namespace in the quota-cell plane.
func quotaNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "quota-"}}
	if err := quotaK8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	return ns.Name
}

func TestAQuotaBackendHoldsInstancesUntilItGrants(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := quotaNamespace(t)
	quotas.decide(ns, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "project p is at its limit of 2 instances in DFW")
	wd := makeWD(ns, "web").parallel().replicas(2).templateAnnotation(simprovider.FailAnnotation, computev1alpha.ReasonImageUnavailable).wd
	g.Expect(quotaK8s.Create(ctx, wd)).To(Succeed())

	// Denied: the Instances stay gated, say why, and the deployment reports
	// the denial over anything else.
	g.Eventually(func(g Gomega) {
		list := &computev1alpha.InstanceList{}
		g.Expect(quotaK8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(2))
		for _, inst := range list.Items {
			g.Expect(inst.Finalizers).To(ConsistOf(computev1alpha.InstanceFinalizer))
			g.Expect(inst.Spec.Controller.SchedulingGates).To(ConsistOf(computev1alpha.SchedulingGate{Name: computev1alpha.QuotaSchedulingGate}))
			g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted).Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
			g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
		}
		got := &computev1alpha.WorkloadDeployment{}
		g.Expect(quotaK8s.Get(ctx, client.ObjectKeyFromObject(wd), got)).To(Succeed())
		available := condition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available.Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
		g.Expect(available.Message).To(Equal("2 instances report QuotaExceeded; instance web-0: project p is at its limit of 2 instances in DFW"))

		evs := &eventsv1.EventList{}
		g.Expect(quotaK8s.List(ctx, evs, client.InNamespace(ns))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(Satisfy(func(e eventsv1.Event) bool {
			return e.Reason == computev1alpha.ReasonQuotaExceeded && e.Type == corev1.EventTypeWarning
		})))
	}).Should(Succeed())

	// Unreachable: fail closed, with the reason on the Instance.
	quotas.decide(ns, metav1.ConditionUnknown, computev1alpha.ReasonQuotaBackendUnavailable, "the quota backend cannot be reached")
	g.Eventually(func(g Gomega) {
		inst := &computev1alpha.Instance{}
		g.Expect(quotaK8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-0"}, inst)).To(Succeed())
		g.Expect(inst.Spec.Controller.SchedulingGates).To(HaveLen(1))
		g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Reason).To(Equal(computev1alpha.ReasonQuotaBackendUnavailable))
	}).Should(Succeed())

	// Granted: no watch event announces it; the quota requeue finds it,
	// the gate goes and the provider runs the Instances, whose image
	// failure now shows.
	quotas.decide(ns, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "granted")
	g.Eventually(func(g Gomega) {
		list := &computev1alpha.InstanceList{}
		g.Expect(quotaK8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, inst := range list.Items {
			g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty())
			quota := condition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
			g.Expect(quota.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(quota.ObservedGeneration).To(Equal(inst.Generation))
		}
		got := &computev1alpha.WorkloadDeployment{}
		g.Expect(quotaK8s.Get(ctx, client.ObjectKeyFromObject(wd), got)).To(Succeed())
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAvailable).Reason).To(Equal(computev1alpha.ReasonImageUnavailable))
	}).Should(Succeed())

	// Deleting an Instance releases its claim before it goes.
	inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}}
	g.Expect(quotaK8s.Get(ctx, client.ObjectKeyFromObject(inst), inst)).To(Succeed())
	old := inst.UID
	g.Expect(quotaK8s.Delete(ctx, inst)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(quotas.releases(ns, "web-1")).To(BeNumerically(">=", 1))
		g.Expect(quotaK8s.Get(ctx, client.ObjectKeyFromObject(inst), inst)).To(Succeed())
		g.Expect(inst.UID).NotTo(Equal(old), "the slot is refilled")
	}).Should(Succeed())
}
