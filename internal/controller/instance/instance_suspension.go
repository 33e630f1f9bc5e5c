package instance

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/provider/instancewrite"
)

// stopped reports whether nothing of a suspended Instance runs: its
// runtime provider says so (Available False, reason Suspended), or the
// Instance never started (scheduling gates still hold it, and no provider
// runs a gated Instance).
func stopped(inst *computev1alpha.Instance) bool {
	if instancewrite.Gated(inst) {
		return true
	}
	available := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable)
	return available != nil && available.Status == metav1.ConditionFalse && available.Reason == computev1alpha.ReasonSuspended
}

// suspendedStatus is the Instance's status.suspended: true once it is
// suspended (SuspendedAnnotation, which the WorkloadDeployment controller
// sets) and stopped — compute says suspended only when the provider has
// confirmed it.
func suspendedStatus(inst *computev1alpha.Instance) bool {
	return inst.DeletionTimestamp == nil && computev1alpha.IsSuspended(inst.Annotations) && stopped(inst)
}

// suspendedReason is Ready's reason and message for a suspended Instance.
func suspendedReason(inst *computev1alpha.Instance) (string, string) {
	if stopped(inst) {
		return computev1alpha.ReasonSuspended, "the workload is suspended: the instance is stopped and kept, with its name and quota claim; resume the workload to start it again"
	}
	return computev1alpha.ReasonSuspended, "the workload is suspended: waiting for the runtime provider to stop the instance"
}
