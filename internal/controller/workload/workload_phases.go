package workload

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/workloadstatus"
)

// planned is what the planning phases decided from a scope. Each phase's
// output is a value the next phase reads; none changes another's.
type planned struct {
	// revisions records the template as the current revision and trims
	// the history; revErr says why the template could not be planned as a
	// revision (nothing is written then).
	revisions revision.Changes
	revErr    error
	// failover are the failover decisions over the placements' targets.
	failover failover.Outcome
	// rollout says which revision each city runs.
	rollout *rollout
	// targets are the placements' targets, then the fallbacks', each with
	// the deployment it wants (placement.Expand).
	targets []placement.Target
}

// plan runs the planning phases on s, which it does not change:
//
//  1. revisions: the template as the current revision (revision.Compute);
//  2. targets: the placements × Locations (placement.Targets);
//  3. failover: which unreachable Locations run in a fallback (planFailover);
//  4. rollout: which revision each city may run (planRollout), on the
//     targets and the failover decisions;
//  5. expand: each target's deployment, built once with the revision the
//     rollout gives its city and, on a fallback's, the failover's
//     bookkeeping (expand).
//
// Only the failover phase has an effect outside the plan: a move takes a
// token of the platform's failover rate.
func (r *Reconciler) plan(s *scope) planned {
	p := planned{}
	p.revisions, p.revErr = revision.Compute(s.workload, s.revisions, s.now)
	var current *revision.Current
	if p.revErr == nil {
		current = &p.revisions.Current
	}
	targets := placement.Targets(s.workload, s.cities, s.deployments)
	p.failover = r.planFailover(s, targets)
	p.rollout = planRollout(s, targets, current, p.failover)
	p.targets = expand(s.workload, targets, p.failover, p.rollout)
	return p
}

// expand returns the placements' targets and the fallbacks the failover
// keeps or makes, each bound one with the deployment it wants: the
// template and annotations of the revision the rollout gives its city, and
// on a fallback's deployment the failover's bookkeeping
// (fallbackAnnotations). targets is not changed.
func expand(w *computev1alpha.Workload, targets []placement.Target, fo failover.Outcome, ro *rollout) []placement.Target {
	byTarget := fo.ByTarget()
	revisionOf := func(t *placement.Target) placement.Revision {
		rev := ro.revisionOf(t)
		if t.FailoverFor != nil {
			rev.Annotations = fallbackAnnotations(rev.Annotations, byTarget[t.FailoverFor.Key()])
		}
		return rev
	}
	return placement.Expand(w, slices.Concat(targets, fo.Fallbacks()), revisionOf)
}

// outcome is what the writes of a reconcile left.
type outcome struct {
	// current is the current revision; nil when it could not be recorded.
	current *revision.Current
	// written are the Workload's cities after the deployments' writes.
	written written
	// status is the status computed; wroteStatus is set when the status
	// patch was sent and accepted.
	status      computev1alpha.WorkloadStatus
	wroteStatus bool
	// The errors of the revisions', the deployments' and the status'
	// writes (revErr also when the revision could not be planned).
	revErr, deployErr, statusErr error
}

// apply writes p: the revisions and the deployments, then the status.
func (r *Reconciler) apply(ctx context.Context, s *scope, p planned) outcome {
	o := writeObjects(ctx, s, p)
	o.status, o.wroteStatus, o.statusErr = writeStatus(ctx, s, p, o)
	return o
}

// writeObjects writes the revisions and the deployments of p. The revision
// is written while the deployments are: they carry the template's hash,
// never the revision object, so a new Workload reaches its cities one
// round trip sooner. A revision that could not be recorded is reported as
// none, and the error retries both.
func writeObjects(ctx context.Context, s *scope, p planned) outcome {
	o := outcome{revErr: p.revErr}
	if p.revErr != nil {
		o.written, o.deployErr = reconcileDeployments(ctx, s, p.targets)
		return o
	}
	var (
		wg       sync.WaitGroup
		recorded bool
		revErr   error
	)
	wg.Go(func() { recorded, revErr = writeRevisions(ctx, s, p.revisions) })
	o.written, o.deployErr = reconcileDeployments(ctx, s, p.targets)
	wg.Wait()
	o.revErr = revErr
	if recorded {
		o.current = &p.revisions.Current
	}
	return o
}

// writeStatus is the status phase: it computes the status from the plan
// and what the writes left, and patches it when it changed. The status is
// written on a copy: the scope keeps the Workload as read, for the events
// and metrics recorded afterwards.
func writeStatus(ctx context.Context, s *scope, p planned, o outcome) (computev1alpha.WorkloadStatus, bool, error) {
	st := workloadstatus.Compute(workloadstatus.Input{
		Workload:     s.workload,
		Cities:       o.written.cities,
		Leaving:      o.written.leaving,
		Revision:     o.current,
		Rollout:      p.rollout.status(o.current),
		Settled:      o.revErr == nil && o.deployErr == nil,
		Now:          metav1.NewTime(s.now),
		InstanceType: s.instanceType,
		Failover:     p.failover.ByTarget(),
	})
	wrote, err := patch.Status(ctx, s.client, s.workload.DeepCopy(), func(w *computev1alpha.Workload) { w.Status = st })
	return st, wrote, err
}

// record emits the events of what the rollout and the failover did in this
// pass and exports the rollout metrics, in one place, from the outcome:
// the failover's events once its deployments are written, the phase count
// once the status is, the durations once the status written changed.
func (r *Reconciler) record(s *scope, wk workloadKey, p planned, o outcome) {
	p.rollout.record(s)
	if o.deployErr == nil {
		recordFailover(s, p.failover)
	}
	if o.statusErr != nil {
		return
	}
	next := o.status.Rollout
	if next == nil {
		r.phases.set(wk, "")
		return
	}
	r.phases.set(wk, next.Phase)
	if o.wroteStatus {
		timingsOf(s.workload.Status.Rollout, next, p.rollout.plan, p.rollout.cities, s.now).observe(next.Strategy)
	}
}

// result is the reconcile's answer: the writes' errors to retry, else a
// requeue when a soak ends, a progress deadline passes or a failover's
// toleration or hold-down ends — none of which changes any object.
func (o outcome) result(p planned) (ctrl.Result, error) {
	if err := errors.Join(o.revErr, o.deployErr, o.statusErr); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: earliest(p.rollout.plan.RequeueAfter, p.failover.RequeueAfter)}, nil
}

// earliest is the sooner of two requeues, zero meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
