package workloadstatus

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// The verdicts: where each city stands and how the Workload is, decided
// here, once, from the reason registry (internal/status). Every reader —
// the CLI, the Workload's conditions, the metrics — takes them as written.

// decideCity writes the city's state. A city that is neither ready nor in a
// state of its own (removing, unreachable, suspending …) shows why: the
// worst reason an Instance of its current template reports (the cell's
// notReady), else what its deployment does.
func decideCity(cs *computev1alpha.WorkloadCityStatus, suspend bool) {
	cs.State = cityState(cs, suspend)
	if cs.State == computev1alpha.CityStateProgressing {
		if r, ok := status.Lookup(cs.Reason); !ok || !r.Blocking && r.Progress == 0 {
			// A health reason (the deployment serves): say what moves.
			cs.Reason, cs.Message = progressReason(cs), ""
		}
	}
}

// cityState decides where a city stands, in the order that matters to a
// person: a city going away or not heard from says only that; a suspension
// requested decides next; then a failure waiting will not fix; then the
// rollout's hold; then the counts.
func cityState(cs *computev1alpha.WorkloadCityStatus, suspend bool) computev1alpha.CityState {
	switch {
	case cs.Reason == computev1alpha.ReasonDeploymentRemoving:
		return computev1alpha.CityStateRemoving
	case cs.Stale && cs.Failover != nil && cs.Failover.Phase == computev1alpha.FailoverFailedOver:
		return computev1alpha.CityStateFailedOver
	case cs.Stale:
		return computev1alpha.CityStateUnreachable
	case suspend && (cs.Suspended || cs.DeploymentName == ""):
		return computev1alpha.CityStateSuspended
	case suspend:
		return computev1alpha.CityStateSuspending
	case status.Terminal(cs.Reason):
		return computev1alpha.CityStateFailed
	case cs.Rollout == computev1alpha.CityWaiting:
		return computev1alpha.CityStateWaitingForWave
	case cs.DeploymentName == "" || cs.Reason == computev1alpha.ReasonDeploymentPending:
		return computev1alpha.CityStateProgressing
	case cs.DesiredReplicas == 0 && cs.Replicas == 0:
		return computev1alpha.CityStateScaledToZero
	case cs.ReplicasReady && cs.Rollout == computev1alpha.CitySoaking:
		return computev1alpha.CityStateSoaking
	case cs.ReplicasReady:
		return computev1alpha.CityStateReady
	}
	return computev1alpha.CityStateProgressing
}

// progressReason says what moves in a city whose deployment serves but has
// not reached its spec: old Instances being replaced, extra ones removed,
// new ones created, or ones that exist but are not ready yet.
func progressReason(cs *computev1alpha.WorkloadCityStatus) string {
	switch {
	case cs.UpdatedReplicas < cs.DesiredReplicas && cs.Replicas > 0:
		return computev1alpha.ReasonRollingUpdate
	case cs.Replicas > cs.DesiredReplicas:
		return computev1alpha.ReasonScalingDown
	case cs.Replicas < cs.DesiredReplicas:
		return computev1alpha.ReasonScalingUp
	}
	return computev1alpha.ReasonReplicasNotReady
}

// notReadyMessage describes the Instances a cell names as not ready.
func notReadyMessage(nr *computev1alpha.InstanceBlockers) string {
	if len(nr.Instances) == 0 {
		return nr.Message
	}
	return status.DescribeWorst(status.Blocker{Object: nr.Instances[0], Reason: nr.Reason, Message: nr.Message}, int(nr.Count))
}

// health sums the cities up in one word. caughtUp says whether every
// deployment carries the Workload's latest spec.
func health(cities []computev1alpha.WorkloadCityStatus, caughtUp bool) computev1alpha.WorkloadHealth {
	var suspended, suspending int
	var stale, failed bool
	var desired, ready, freshReady int32
	done := caughtUp
	for _, c := range cities {
		switch c.State {
		case computev1alpha.CityStateSuspended:
			suspended++
		case computev1alpha.CityStateSuspending:
			suspending++
		case computev1alpha.CityStateUnreachable, computev1alpha.CityStateFailedOver:
			stale = true
		case computev1alpha.CityStateFailed:
			failed = true
		}
		done = done && c.State.Done()
		if c.State != computev1alpha.CityStateRemoving {
			desired += c.DesiredReplicas
			ready += c.ReadyReplicas
			if !c.Stale {
				freshReady += c.ReadyReplicas
			}
		}
	}
	switch {
	case suspended > 0 && suspended == len(cities):
		return computev1alpha.HealthSuspended
	case suspended+suspending > 0:
		return computev1alpha.HealthSuspending
	case stale && freshReady > 0 && !failed:
		return computev1alpha.HealthDegraded
	case stale && freshReady == 0:
		return computev1alpha.HealthUnknown
	case done && desired == 0:
		return computev1alpha.HealthScaledToZero
	case done:
		return computev1alpha.HealthHealthy
	case failed && ready > 0:
		return computev1alpha.HealthDegraded
	case failed:
		return computev1alpha.HealthFailing
	}
	return computev1alpha.HealthProgressing
}

// failedProgressing is kubectl's rule for Progressing: False, with the
// reason, once waiting cannot finish the rollout — a city failed for a
// terminal reason. A rollout across cities that already halted says so
// itself.
func failedProgressing(progressing metav1.Condition, cities []cityView) metav1.Condition {
	if progressing.Status == metav1.ConditionFalse && status.Terminal(progressing.Reason) {
		return progressing
	}
	var failed []status.Blocker
	for _, c := range cities {
		if c.status.State == computev1alpha.CityStateFailed {
			failed = append(failed, status.Blocker{Object: c.label, Reason: c.status.Reason, Message: c.status.Message})
		}
	}
	if len(failed) == 0 {
		return progressing
	}
	slices.SortFunc(failed, status.Compare)
	parts := make([]string, 0, len(failed))
	for _, f := range failed {
		parts = append(parts, f.Object+": "+f.Message)
	}
	return metav1.Condition{Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse,
		Reason: failed[0].Reason, Message: "waiting cannot finish the rollout: " + strings.Join(parts, "; ")}
}
