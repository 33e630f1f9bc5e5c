package instance

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// QuotaClient is the seam to a quota backend: it claims quota for an
// Instance in its project's quota plane and releases the claim.
type QuotaClient interface {
	// Evaluate makes sure the Instance's claim exists and returns the
	// QuotaGranted condition its state maps to (type, status, reason,
	// message; the reconciler sets observedGeneration). It is called on
	// every reconcile of a live Instance, so it must be cheap when nothing
	// changed. When the backend cannot be asked it returns the error and a
	// condition that says why (fail closed: the Instance stays gated).
	Evaluate(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, error)
	// Release deletes the Instance's claim; a claim that is already gone
	// is not an error.
	Release(ctx context.Context, inst *computev1alpha.Instance) error
}

// evaluateQuota returns the QuotaGranted condition for the Instance's
// current generation and, while quota is not granted, how long to wait
// before looking again.
func (r *Reconciler) evaluateQuota(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, time.Duration) {
	if r.Quota == nil {
		c := quotaDisabledCondition()
		c.ObservedGeneration = inst.Generation
		return c, 0
	}
	c, err := r.Quota.Evaluate(ctx, inst)
	if err != nil {
		// The condition carries the reason; the requeue below retries on
		// the quota schedule rather than in error backoff.
		ctrl.LoggerFrom(ctx).Info("Quota backend could not be asked", "reason", c.Reason, "error", err.Error())
	}
	c.Type = computev1alpha.ConditionQuotaGranted
	c.ObservedGeneration = inst.Generation
	if c.Status == "" {
		c.Status = metav1.ConditionUnknown
	}
	if c.Reason == "" {
		c.Reason = computev1alpha.ReasonPendingEvaluation
	}
	if c.Status == metav1.ConditionTrue {
		return c, 0
	}
	return c, quotaRequeueAfter(r.age(inst))
}
