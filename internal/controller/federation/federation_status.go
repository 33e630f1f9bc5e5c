package federation

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// maxMessageLength bounds the Federated condition's message.
const maxMessageLength = 1024

// Reachability is what is known about the cell of a deployment's city.
type Reachability struct {
	// Unreachable is set while the cell is not heard from.
	Unreachable bool
	// LastSeen is when the cell was last heard from (while Unreachable).
	LastSeen time.Time
	// Message says which signal says so, and since when.
	Message string
}

// staleConditions are the conditions the cell computes: Unknown while it is
// not heard from.
var staleConditions = []string{
	computev1alpha.ConditionAvailable, computev1alpha.ConditionProgressing, computev1alpha.ConditionReplicasReady,
	computev1alpha.ConditionAutoscalingReady, computev1alpha.ConditionAutoscalingLimited,
}

// projectConditions are the conditions of a project WorkloadDeployment the
// management plane writes itself: never taken from the hub copy.
var projectConditions = []string{computev1alpha.ConditionFederated, computev1alpha.ConditionReferencedDataReady}

// MirrorStatus returns the status project should report given its hub copy
// (nil when there is none to read), its Federated condition and what is
// known about its city's cell. The hub's counts, conditions, location,
// selector, template hash, suspended, notReady and autoscaling are copied; the hub's observedGeneration is
// translated into project's generation (UpstreamGeneration); the project's
// own Federated condition is kept and updated. While the cell is
// unreachable the counts stay the last known, the cell's conditions are
// Unknown with reason CellUnreachable (their messages say what was last
// known), and lastSeenTime says when the cell was last heard from.
// Condition transition times are kept when a condition did not change. It
// is pure: the same inputs give the same status.
func MirrorStatus(project, hubCopy *computev1alpha.WorkloadDeployment, federated metav1.Condition, reach Reachability, now metav1.Time) computev1alpha.WorkloadDeploymentStatus {
	out := *project.Status.DeepCopy()
	if hubCopy != nil {
		hs := hubCopy.Status
		out.ObservedGeneration = UpstreamGeneration(project, hubCopy)
		out.ReplicaCounts = hs.ReplicaCounts
		out.Location = hs.Location.DeepCopy()
		out.Selector = hs.Selector
		out.TemplateHash = hs.TemplateHash
		out.Suspended = hs.Suspended
		out.NotReady = hs.NotReady.DeepCopy()
		out.Autoscaling = hs.Autoscaling.DeepCopy()
		var conds []metav1.Condition
		for _, c := range hs.Conditions {
			if slices.Contains(projectConditions, c.Type) {
				continue
			}
			c.ObservedGeneration = out.ObservedGeneration
			conds = append(conds, c)
		}
		for _, t := range projectConditions {
			if prev := meta.FindStatusCondition(project.Status.Conditions, t); prev != nil {
				conds = append(conds, *prev)
			}
		}
		out.Conditions = conds
	}
	federated.Type = computev1alpha.ConditionFederated
	federated.ObservedGeneration = project.Generation
	federated.Message = truncate(federated.Message)
	if prev := meta.FindStatusCondition(out.Conditions, federated.Type); prev == nil || prev.Status != federated.Status {
		federated.LastTransitionTime = now
	} else {
		federated.LastTransitionTime = prev.LastTransitionTime
	}
	meta.RemoveStatusCondition(&out.Conditions, federated.Type)
	out.Conditions = append(out.Conditions, federated)
	out.LastSeenTime = nil
	if reach.Unreachable {
		markStale(&out, project.Status.Conditions, reach, now)
	}
	slices.SortFunc(out.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// markStale turns the cell's conditions in out to Unknown, reason
// CellUnreachable, each message keeping what was last known; previous are
// the conditions the project reports now, whose transition times are kept
// when the condition was already stale.
func markStale(out *computev1alpha.WorkloadDeploymentStatus, previous []metav1.Condition, reach Reachability, now metav1.Time) {
	seen := metav1.NewTime(reach.LastSeen)
	out.LastSeenTime = &seen
	for _, t := range staleConditions {
		known := "nothing"
		if c := meta.FindStatusCondition(out.Conditions, t); c != nil {
			if c.Reason == computev1alpha.ReasonCellUnreachable {
				continue // already stale; keep it as it is
			}
			known = fmt.Sprintf("%s=%s (%s)", t, c.Status, c.Reason)
		} else if t != computev1alpha.ConditionAvailable {
			continue
		}
		stale := metav1.Condition{
			Type:               t,
			Status:             metav1.ConditionUnknown,
			Reason:             computev1alpha.ReasonCellUnreachable,
			Message:            truncate(fmt.Sprintf("the city's cell is unreachable: %s; last known: %s", reach.Message, known)),
			ObservedGeneration: out.ObservedGeneration,
			LastTransitionTime: now,
		}
		if prev := meta.FindStatusCondition(previous, t); prev != nil && prev.Reason == computev1alpha.ReasonCellUnreachable && prev.Status == stale.Status {
			stale.LastTransitionTime = prev.LastTransitionTime
		}
		meta.RemoveStatusCondition(&out.Conditions, t)
		out.Conditions = append(out.Conditions, stale)
	}
}

// UpstreamGeneration returns the project generation the hub copy's status
// describes: the generation recorded on the copy when every member cluster
// has caught up with the copy's current generation (Karmada's aggregated
// observedGeneration equals the copy's generation), otherwise what the
// project already reports. It never goes backwards and never exceeds the
// project's generation.
func UpstreamGeneration(project, hubCopy *computev1alpha.WorkloadDeployment) int64 {
	current := project.Status.ObservedGeneration
	if hubCopy.Generation == 0 || hubCopy.Status.ObservedGeneration != hubCopy.Generation {
		return current
	}
	copied, err := strconv.ParseInt(hubCopy.Annotations[UpstreamGenerationAnnotation], 10, 64)
	if err != nil || copied > project.Generation {
		return current
	}
	return max(current, copied)
}

// federatedCondition reports the hub copy in hubNamespace as up to date.
func federatedCondition(hubNamespace string) metav1.Condition {
	return metav1.Condition{
		Type:    computev1alpha.ConditionFederated,
		Status:  metav1.ConditionTrue,
		Reason:  computev1alpha.ReasonFederated,
		Message: fmt.Sprintf("copied to namespace %s of the federation plane", hubNamespace),
	}
}

// failedCondition reports that the hub copy could not be written or
// removed; message says what failed and why.
func failedCondition(message string) metav1.Condition {
	return metav1.Condition{
		Type:    computev1alpha.ConditionFederated,
		Status:  metav1.ConditionFalse,
		Reason:  computev1alpha.ReasonFederationFailed,
		Message: message,
	}
}

// truncate bounds a message.
func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return s[:maxMessageLength-3] + "..."
}
