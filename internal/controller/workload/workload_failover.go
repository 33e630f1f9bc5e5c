package workload

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/placement"
)

// Failover event reasons.
const (
	// EventFailedOver: an unreachable Location's replicas were started in a
	// fallback.
	EventFailedOver = "FailedOver"
	// EventFailoverMoved: a fallback refused the replicas and the next one
	// got them.
	EventFailoverMoved = "FailoverMoved"
	// EventFailoverReturned: the Location is back and its fallback drained.
	EventFailoverReturned = "FailoverReturned"
)

// DefaultFailoverRate is how many Workloads per second may start or move a
// failover in one manager unless Reconciler.FailoverRate says otherwise:
// Karmada's default eviction rate (--resource-eviction-rate 0.5), so a
// large city going dark does not stampede its fallbacks.
const DefaultFailoverRate = 0.5

// NewFailoverLimiter returns the platform-wide failover rate limiter for
// perSecond Workloads per second (burst 1); nil (no limit) when perSecond
// is not positive.
func NewFailoverLimiter(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), 1)
}

// planFailover is the failover phase: it plans the failover of
// s.workload's placements over their targets at s.now, holding every move
// back while the platform's rate does not allow one (one token a Workload
// and pass).
func (r *Reconciler) planFailover(s *scope, targets []placement.Target) failover.Outcome {
	plan := failover.Make(failover.Input{
		Workload: s.workload, Targets: targets, Deployments: s.deployments,
		Cities: s.cities, Reachable: r.Reachable, Now: s.now,
	})
	if plan.Starts() == 0 || r.FailoverRate == nil {
		return plan
	}
	res := r.FailoverRate.ReserveN(s.now, 1)
	if delay := res.DelayFrom(s.now); !res.OK() || delay > 0 {
		res.CancelAt(s.now)
		plan.Hold(fmt.Sprintf("waiting for the platform's failover rate (%g Workloads a second)", float64(r.FailoverRate.Limit())),
			max(delay, time.Second))
	}
	return plan
}

// fallbackAnnotations adds to annotations (the caller's own map, nil for
// none) the failover's bookkeeping a fallback's deployment carries, from d,
// the decision for the Location it stands in for: when the Location was
// first seen back (an empty value once it is not, after it was), and which
// earlier fallback refused its replicas. It returns the map, made when
// there was none and something is added.
func fallbackAnnotations(annotations map[string]string, d *failover.Decision) map[string]string {
	if d == nil {
		return annotations
	}
	set := func(key, value string) {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = value
	}
	if d.ReturningSince != "" || (d.Existing != nil && d.Existing.Annotations[computev1alpha.FailoverReturningSinceAnnotation] != "") {
		set(computev1alpha.FailoverReturningSinceAnnotation, d.ReturningSince)
	}
	if d.MovedFrom != "" {
		set(computev1alpha.FailoverMovedFromAnnotation, d.MovedFrom)
	}
	return annotations
}

// recordFailover emits an event for each move the plan made.
func recordFailover(s *scope, plan failover.Outcome) {
	for i := range plan.Decisions {
		d := &plan.Decisions[i]
		switch {
		case d.Start && d.Previous != nil:
			s.recorder.Eventf(s.workload, nil, corev1.EventTypeWarning, EventFailoverMoved, "Failover", "%s", d.Status.Message)
		case d.Start:
			s.recorder.Eventf(s.workload, nil, corev1.EventTypeWarning, EventFailedOver, "Failover", "%s", d.Status.Message)
		case d.Drain != nil:
			s.recorder.Eventf(s.workload, nil, corev1.EventTypeNormal, EventFailoverReturned, "Failover",
				"%s is back and has been Available for its hold-down; draining its replicas from %s (WorkloadDeployment %s)",
				d.Target.Label(), strings.TrimPrefix(placement.KeyOf(d.Target.Placement, d.Drain.Spec.CityCode, nil), d.Target.Placement+"/"), d.Drain.Name)
		}
	}
}
