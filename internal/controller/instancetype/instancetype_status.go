package instancetype

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// observation is what one reconcile read about an InstanceType.
type observation struct {
	// it is the InstanceType as read.
	it *computev1alpha.InstanceType
	// replacement is the type it names as replacement; nil when it names
	// none or the plane has none of that name.
	replacement *computev1alpha.InstanceType
}

// computeStatus returns it's status as o shows it at now: status.deprecatedAt
// recorded once the type is Deprecated (kept once set), and the Ready
// condition. Every other status field is kept as it was.
func computeStatus(o observation, now time.Time) computev1alpha.InstanceTypeStatus {
	st := *o.it.Status.DeepCopy()
	if o.it.Spec.Lifecycle.Phase == computev1alpha.InstanceTypePhaseDeprecated && st.DeprecatedAt == nil {
		at := metav1.NewTime(now.Truncate(time.Second))
		st.DeprecatedAt = &at
	}
	ready := readyCondition(o)
	ready.Type = computev1alpha.InstanceTypeConditionReady
	ready.ObservedGeneration = o.it.Generation
	ready.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// readyCondition is the status, reason and message of the Ready condition.
func readyCondition(o observation) metav1.Condition {
	lc := o.it.Spec.Lifecycle
	switch {
	case lc.Phase == computev1alpha.InstanceTypePhaseDisabled:
		return metav1.Condition{
			Status: metav1.ConditionFalse, Reason: computev1alpha.InstanceTypeReasonDisabled,
			Message: "The instance type is Disabled: no new Workload may use it",
		}
	case lc.ReplacementInstanceType == "":
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: computev1alpha.InstanceTypeReasonValid, Message: "The instance type is ready"}
	case o.replacement == nil:
		return metav1.Condition{
			Status: metav1.ConditionFalse, Reason: computev1alpha.InstanceTypeReasonReplacementNotFound,
			Message: fmt.Sprintf("Replacement instance type %q does not exist", lc.ReplacementInstanceType),
		}
	case o.replacement.Spec.Lifecycle.Phase == computev1alpha.InstanceTypePhaseDisabled:
		return metav1.Condition{
			Status: metav1.ConditionFalse, Reason: computev1alpha.InstanceTypeReasonReplacementDisabled,
			Message: fmt.Sprintf("Replacement instance type %q is Disabled", lc.ReplacementInstanceType),
		}
	}
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: computev1alpha.InstanceTypeReasonValid, Message: "The instance type is ready"}
}
