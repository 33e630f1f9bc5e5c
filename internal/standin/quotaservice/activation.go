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
	reg := &quotav1alpha1.ResourceRegistration{}
	if err := r.client.Get(ctx, req.NamespacedName, reg); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	all := &quotav1alpha1.ResourceRegistrationList{}
	if err := r.client.List(ctx, all); err != nil {
		return reconcile.Result{}, fmt.Errorf("failed to list ResourceRegistrations: %w", err)
	}
	c := metav1.Condition{
		Type:    quotav1alpha1.ResourceRegistrationConditionActive,
		Status:  metav1.ConditionTrue,
		Reason:  quotav1alpha1.ResourceRegistrationReasonRegistrationActive,
		Message: fmt.Sprintf("claims and grants may use %s", reg.Spec.ResourceType),
	}
	if _, why := indexRegistrations(all.Items).registrationFor(reg.Spec.ResourceType); why != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, quotav1alpha1.ResourceRegistrationReasonValidationFailed, why
	}
	c.ObservedGeneration = reg.Generation
	c.Message = status.Truncate(c.Message)
	_, err := patch.Status(ctx, r.client, reg, func(o *quotav1alpha1.ResourceRegistration) {
		status.SetCondition(&o.Status.Conditions, c, metav1.NewTime(r.clock.Now()))
		o.Status.ObservedGeneration = o.Generation
	})
	return reconcile.Result{}, err
}

// reconcileGrant sets a grant's Active condition.
func (r *activationReconciler) reconcileGrant(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	g := &quotav1alpha1.ResourceGrant{}
	if err := r.client.Get(ctx, req.NamespacedName, g); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	regs := &quotav1alpha1.ResourceRegistrationList{}
	if err := r.client.List(ctx, regs); err != nil {
		return reconcile.Result{}, fmt.Errorf("failed to list ResourceRegistrations: %w", err)
	}
	c := metav1.Condition{
		Type:    quotav1alpha1.ResourceGrantConditionActive,
		Status:  metav1.ConditionTrue,
		Reason:  quotav1alpha1.ResourceGrantReasonGrantActive,
		Message: fmt.Sprintf("the allowances count towards the buckets of %s %s", g.Spec.ConsumerRef.Kind, g.Spec.ConsumerRef.Name),
	}
	if why := validateGrant(g, indexRegistrations(regs.Items)); why != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, quotav1alpha1.ResourceGrantReasonValidationFailed, why
	}
	c.ObservedGeneration = g.Generation
	c.Message = status.Truncate(c.Message)
	_, err := patch.Status(ctx, r.client, g, func(o *quotav1alpha1.ResourceGrant) {
		status.SetCondition(&o.Status.Conditions, c, metav1.NewTime(r.clock.Now()))
		o.Status.ObservedGeneration = o.Generation
	})
	return reconcile.Result{}, err
}
