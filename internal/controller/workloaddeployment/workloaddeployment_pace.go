package workloaddeployment

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// StatusInterval is how long a status change that only reports progress is
// held back so that the changes after it are written with it, in one write.
//
// A cell deployment's status changes several times on its way to Ready
// (its Instances appear, wait for quota, are released, provisioned, become
// ready one by one), and every write is multiplied on the hub: Karmada
// copies it into the Work's status, the ResourceBinding's and the hub
// copy's, with events. Progress is not urgent; what a person or another
// controller acts on is written at once (see urgent): a newly observed
// generation, reaching or leaving the desired state, losing availability,
// a failure appearing or clearing. A condition that turned while its change
// was held carries the time of the write as its lastTransitionTime, at most
// one interval late.
const StatusInterval = time.Second

// pace remembers, per WorkloadDeployment, since when a progress-only status
// change has been held back.
type pace struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]time.Time
}

// hold returns how long to hold a status write from old to new back, or
// zero to write it now. The first progress change held starts the
// interval; the changes that follow join it, and whatever the status is
// when the interval is up is written.
func (p *pace) hold(key types.NamespacedName, old, new *computev1alpha.WorkloadDeploymentStatus, now time.Time) time.Duration {
	if urgent(old, new) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	since, ok := p.pending[key]
	if !ok {
		if p.pending == nil {
			p.pending = map[types.NamespacedName]time.Time{}
		}
		p.pending[key] = now
		return StatusInterval
	}
	return holdFor(since, now)
}

// holdFor returns what is left of the interval of a change held since
// since: zero once it is up.
func holdFor(since, now time.Time) time.Duration {
	return max(StatusInterval-now.Sub(since), 0)
}

// settled records that nothing is held for a WorkloadDeployment any more:
// its status was written, or what it observes is what its status says.
func (p *pace) settled(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, key)
}

// forget drops a WorkloadDeployment that is going or gone.
func (p *pace) forget(key types.NamespacedName) {
	p.settled(key)
}

// urgent reports whether a status change from old to new must be written
// at once rather than held with the progress that follows it:
//
//   - a new generation observed (or a new template hash, a new desired
//     count) on a deployment whose status was written before: the writer
//     of the spec waits for it;
//   - the desired state reached or left (every desired replica ready, up
//     to date and programmed, nothing else left; ReplicasReady turning True
//     or False): a Workload's clock stops on it and a rollout across cities
//     moves to its next city on it;
//   - suspended or resumed (status.suspended changes);
//   - availability lost (Available True to False);
//   - a failure appearing, changing or clearing: a condition whose status
//     or reason changes to or from a reason someone must act on
//     (status.Failing: quota denied, configuration rejected, image
//     unavailable, crashing …).
//
// Everything else is progress: the counts, the messages, and the reasons
// a deployment passes through while it comes up (NoReplicasReady,
// PendingQuota, Provisioning; ScalingUp, ReplicasNotReady,
// RolloutComplete; Available turning True with the first ready replica).
//
// A new deployment's first status is progress too unless it already
// reports the desired state, a failure or suspension: most deployments
// reach their desired state within the interval, and then their first
// write is their only write of the bring-up (each write a cell saves is
// several in the federation plane, where Karmada reflects it).
func urgent(old, new *computev1alpha.WorkloadDeploymentStatus) bool {
	if neverWritten(old) {
		return desiredState(new) || new.Suspended || slices.ContainsFunc(new.Conditions, failure)
	}
	if old.ObservedGeneration != new.ObservedGeneration || old.TemplateHash != new.TemplateHash || old.Suspended != new.Suspended ||
		old.DesiredReplicas != new.DesiredReplicas || len(old.Conditions) != len(new.Conditions) {
		return true
	}
	if desiredState(old) != desiredState(new) {
		return true
	}
	for i := range new.Conditions {
		n := new.Conditions[i]
		o := meta.FindStatusCondition(old.Conditions, n.Type)
		switch {
		case o == nil:
			return true
		case o.Status == n.Status && o.Reason == n.Reason:
			continue
		case n.Type == computev1alpha.ConditionReplicasReady:
			return true
		case n.Type == computev1alpha.ConditionAvailable && o.Status == metav1.ConditionTrue:
			return true
		case failure(*o) || failure(n):
			return true
		}
	}
	return false
}

// neverWritten reports whether a status is the empty one of a deployment
// whose status has not been written yet.
func neverWritten(s *computev1alpha.WorkloadDeploymentStatus) bool {
	return s.ObservedGeneration == 0 && len(s.Conditions) == 0
}

// failure reports whether a condition says something failed that someone
// must act on.
func failure(c metav1.Condition) bool {
	return c.Status != metav1.ConditionTrue && status.Failing(c.Reason)
}

// desiredState reports whether a status says every desired replica is
// ready, up to date and programmed, with no other Instance left.
func desiredState(s *computev1alpha.WorkloadDeploymentStatus) bool {
	c := s.ReplicaCounts
	return c.Replicas == c.DesiredReplicas && c.UpdatedReplicas == c.DesiredReplicas &&
		c.CurrentReplicas == c.DesiredReplicas && c.ReadyReplicas == c.DesiredReplicas
}
