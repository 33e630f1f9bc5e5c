package quotaservice

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/status"
)

// activationReconciler reports on ResourceRegistrations and ResourceGrants
// whether they count (their Active condition). The evaluation loop does not
// read these conditions, it validates for itself with the same functions, so
// a decision never waits for a status write and never trusts a stale one.
type activationReconciler struct {
	client client.Client
	clock  clock.PassiveClock
}

// reconcileRegistration sets a registration's Active condition.
func (r *activationReconciler) reconcileRegistration(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return activate(ctx, r, req, &quotav1alpha1.ResourceRegistration{},
		func(reg *quotav1alpha1.ResourceRegistration, regs registrations) metav1.Condition {
			_, why := regs.registrationFor(reg.Spec.ResourceType)
			return activeCondition(quotav1alpha1.ResourceRegistrationConditionActive,
				quotav1alpha1.ResourceRegistrationReasonRegistrationActive, fmt.Sprintf("claims and grants may use %s", reg.Spec.ResourceType),
				quotav1alpha1.ResourceRegistrationReasonValidationFailed, why)
		},
		func(reg *quotav1alpha1.ResourceRegistration) (*[]metav1.Condition, *int64) {
			return &reg.Status.Conditions, &reg.Status.ObservedGeneration
		})
}

// reconcileGrant sets a grant's Active condition.
func (r *activationReconciler) reconcileGrant(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return activate(ctx, r, req, &quotav1alpha1.ResourceGrant{},
		func(g *quotav1alpha1.ResourceGrant, regs registrations) metav1.Condition {
			return activeCondition(quotav1alpha1.ResourceGrantConditionActive,
				quotav1alpha1.ResourceGrantReasonGrantActive, fmt.Sprintf("the allowances count towards the buckets of %s %s", g.Spec.ConsumerRef.Kind, g.Spec.ConsumerRef.Name),
				quotav1alpha1.ResourceGrantReasonValidationFailed, validateGrant(g, regs))
		},
		func(g *quotav1alpha1.ResourceGrant) (*[]metav1.Condition, *int64) {
			return &g.Status.Conditions, &g.Status.ObservedGeneration
		})
}

// activate is the reconcile of both activation controllers: it reads the
// object of req into obj and, from every registration, the Active
// condition judge gives it, and patches it into obj's status, which
// statusOf locates (its conditions and observed generation).
func activate[T client.Object](ctx context.Context, r *activationReconciler, req reconcile.Request, obj T,
	judge func(T, registrations) metav1.Condition, statusOf func(T) (*[]metav1.Condition, *int64)) (reconcile.Result, error) {
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	all := &quotav1alpha1.ResourceRegistrationList{}
	if err := r.client.List(ctx, all); err != nil {
		return reconcile.Result{}, fmt.Errorf("failed to list ResourceRegistrations: %w", err)
	}
	c := judge(obj, indexRegistrations(all.Items))
	c.ObservedGeneration = obj.GetGeneration()
	c.Message = status.Truncate(c.Message)
	_, err := patch.Status(ctx, r.client, obj, func(o T) {
		conditions, observed := statusOf(o)
		status.SetCondition(conditions, c, metav1.NewTime(r.clock.Now()))
		*observed = o.GetGeneration()
	})
	return reconcile.Result{}, err
}

// activeCondition returns the condition of type t: True with reason
// active and message when why is empty, False with reason failed and why
// as its message otherwise.
func activeCondition(t, active, message, failed, why string) metav1.Condition {
	if why != "" {
		return metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: failed, Message: why}
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: active, Message: message}
}
