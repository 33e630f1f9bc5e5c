package cell

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/instance"
)

func TestAnInstanceWhoseClaimIsOrphanedIsStillDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := quotaNamespace(t)
	quotas.decide(ns, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "granted")
	wd := makeWD(ns, "web").replicas(1).wd
	g.Expect(quotaK8s.Create(ctx, wd)).To(Succeed())

	inst := &computev1alpha.Instance{}
	g.Eventually(func(g Gomega) {
		g.Expect(quotaK8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-0"}, inst)).To(Succeed())
		g.Expect(inst.Finalizers).To(ContainElement(computev1alpha.InstanceFinalizer))
		g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty())
	}).Should(Succeed())

	// The project can no longer be resolved: scaling to zero deletes the
	// Instance, its claim cannot be released, and it goes anyway, with an
	// event that says what was left behind.
	quotas.orphan(ns)
	// A merge patch of spec.replicas cannot conflict with the controller's
	// status writes.
	scaled := wd.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](0)
	g.Expect(quotaK8s.Patch(ctx, scaled, client.MergeFrom(wd))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := quotaK8s.Get(ctx, client.ObjectKeyFromObject(inst), &computev1alpha.Instance{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Instance is gone, got %v", err)

		evs := &eventsv1.EventList{}
		g.Expect(quotaK8s.List(ctx, evs, client.InNamespace(ns))).To(Succeed())
		g.Expect(evs.Items).To(ContainElement(Satisfy(func(e eventsv1.Event) bool {
			return e.Reason == instance.ReasonQuotaClaimOrphaned && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "web-0"
		})))
	}).Should(Succeed())
	g.Expect(quotas.releases(ns, "web-0")).To(BeZero())
}
