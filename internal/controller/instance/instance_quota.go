package instance

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/lazymetrics"
	quotaclient "github.com/citycells/compute/internal/quota"
)

// ReasonQuotaClaimOrphaned is the reason of the Warning event emitted when an
// Instance is let go without releasing its quota claim, because its project
// cannot be resolved.
const ReasonQuotaClaimOrphaned = "QuotaClaimOrphaned"

// Quota metrics, part of compute's operational contract.
const (
	// QuotaWaitMetric observes, for each Instance whose Quota scheduling
	// gate is released, the seconds from its creation to the release: how
	// long it waited for quota.
	QuotaWaitMetric = "compute_quota_wait_seconds"
	// QuotaRefusalsMetric counts the times an Instance's quota was refused:
	// its QuotaGranted condition turned False (QuotaExceeded, a project or
	// namespace quota cannot be found, …) or QuotaNoBudget, by reason.
	// Failures to ask the backend are compute_quota_eval_failures_total.
	QuotaRefusalsMetric = "compute_quota_refusals_total"
)

var (
	quotaWait = lazymetrics.Histogram(QuotaWaitMetric,
		"Seconds from an Instance's creation to the release of its Quota scheduling gate.",
		[]float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600})
	quotaRefusals = lazymetrics.CounterVec(QuotaRefusalsMetric,
		"Times an Instance's quota was refused (QuotaGranted turned False, or QuotaNoBudget), by reason.",
		"reason")
)

// countRefusal counts quota, the QuotaGranted condition just written over
// previous, when it newly refuses.
func countRefusal(previous *metav1.Condition, quota metav1.Condition) {
	if !refuses(&quota) || refuses(previous) && previous.Reason == quota.Reason {
		return
	}
	quotaRefusals.WithLabelValues(quota.Reason).Inc()
}

// refuses reports whether a QuotaGranted condition is a refusal.
func refuses(c *metav1.Condition) bool {
	return c != nil && (c.Status == metav1.ConditionFalse || c.Reason == computev1alpha.ReasonQuotaNoBudget)
}

// QuotaClient is the seam to a quota backend: it claims quota for an
// Instance in its project's quota plane and releases the claim.
// *quota.Client implements it; see internal/quota for the contract the
// reconciler follows.
type QuotaClient interface {
	// Evaluate makes sure the Instance's claim exists and returns the
	// QuotaGranted condition its state maps to (type, status, reason,
	// message; the reconciler sets observedGeneration). It is called on
	// every reconcile of a live Instance, so it must be cheap when nothing
	// changed. When the backend cannot be asked it returns the error and a
	// condition that says why (fail closed: the Instance stays gated).
	Evaluate(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, error)
	// Release deletes the Instance's claim; a claim that is already gone
	// is not an error. An error wrapping quota.ErrClaimOrphaned means the
	// claim cannot be found because the Instance's project cannot be
	// resolved: the Instance is let go anyway.
	Release(ctx context.Context, inst *computev1alpha.Instance) error
}

// QuotaWatcher is implemented by quota backends whose claims can be
// watched (*quota.Client with statically configured quota planes). The
// sources enqueue the Instance whose claim changed, so a grant is seen as
// it lands; the age-anchored requeue remains the safety net.
type QuotaWatcher interface {
	// WatchSources returns the sources of claim events; none is fine.
	WatchSources(mgr manager.Manager) ([]source.Source, error)
}

// quotaSources returns the claim watches of the quota backend, if it has
// any.
func (r *Reconciler) quotaSources(mgr manager.Manager) ([]source.Source, error) {
	w, ok := r.Quota.(QuotaWatcher)
	if !ok {
		return nil, nil
	}
	srcs, err := w.WatchSources(mgr)
	if err != nil {
		return nil, fmt.Errorf("instance controller: failed to watch quota claims: %w", err)
	}
	return srcs, nil
}

// evaluateQuota returns the QuotaGranted condition for the Instance's
// current generation and, while quota is not granted, how long to wait
// before looking again (quota.RequeueAfter, also when the backend could not
// be asked: a broken backend is polled on the schedule, not in error
// backoff).
func (r *Reconciler) evaluateQuota(ctx context.Context, inst *computev1alpha.Instance) (metav1.Condition, time.Duration) {
	if r.Quota == nil {
		c := quotaDisabledCondition()
		c.ObservedGeneration = inst.Generation
		return c, 0
	}
	c, err := r.Quota.Evaluate(ctx, inst)
	if err != nil {
		// The condition carries the reason and is written before anything
		// else happens; the error itself is not returned.
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
	return c, r.quotaRequeue(inst)
}

// quotaRequeue is the wait before looking at a pending quota decision
// again, anchored on the Instance's age.
func (r *Reconciler) quotaRequeue(inst *computev1alpha.Instance) time.Duration {
	return quotaclient.RequeueAfter(r.Clock.Since(inst.CreationTimestamp.Time))
}

// releaseQuota deletes the Instance's claim before its finalizer goes. It
// returns nil when the finalizer may be removed: the claim is released, or
// it is orphaned because the Instance's project cannot be resolved (logged
// at error level and reported with a Warning event; the quota client has
// counted it), since deletion must never wedge. Any other failure is
// returned, and the finalizer stays until the claim is deleted.
func (r *Reconciler) releaseQuota(ctx context.Context, inst *computev1alpha.Instance) error {
	if r.Quota == nil {
		return nil
	}
	err := r.Quota.Release(ctx, inst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, quotaclient.ErrClaimOrphaned):
		ctrl.LoggerFrom(ctx).Error(err, "Letting the Instance go without releasing its quota claim: its project cannot be resolved",
			"claim", quotaclient.ClaimName(inst))
		r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, ReasonQuotaClaimOrphaned, "Delete",
			"the quota claim %s was not released because the project of the instance cannot be resolved: %v; delete it in the project's quota plane",
			quotaclient.ClaimName(inst), err)
		return nil
	default:
		return fmt.Errorf("failed to release the quota claim of Instance %s: %w", inst.Name, err)
	}
}
