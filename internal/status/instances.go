package status

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// maxNamedInstances bounds the Instances an InstanceBlockers names.
const maxNamedInstances = 5

// BlockerOf says why an Instance is not ready; false when it is. Its Ready
// condition says, once the Instance controller wrote it: a gated Instance's
// is the reason its gates hold it (PendingQuota, AwaitingPropagation, the
// referenced-data verdict's). Before that, an Instance the ReferencedData
// gate holds is waiting for its data, any other is provisioning. An
// Instance being deleted is Terminating.
func BlockerOf(inst *computev1alpha.Instance) (Blocker, bool) {
	switch ready := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady); {
	case inst.DeletionTimestamp != nil:
		return Blocker{Object: inst.Name, Reason: computev1alpha.ReasonTerminating, Message: "the instance is being deleted"}, true
	case ready == nil && gatedBy(inst, computev1alpha.ReferencedDataSchedulingGate):
		return Blocker{Object: inst.Name, Reason: computev1alpha.ReasonAwaitingPropagation,
			Message: "the instance waits for its referenced ConfigMaps and Secrets to reach the cell"}, true
	case ready == nil:
		return Blocker{Object: inst.Name, Reason: computev1alpha.ReasonProvisioning, Message: "the instance has not reported readiness yet"}, true
	case ready.Status != metav1.ConditionTrue:
		return Blocker{Object: inst.Name, Reason: ready.Reason, Message: ready.Message}, true
	}
	return Blocker{}, false
}

// gatedBy reports whether the named scheduling gate holds an Instance.
func gatedBy(inst *computev1alpha.Instance, gate string) bool {
	return inst.Spec.Controller != nil && slices.ContainsFunc(inst.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
		return g.Name == gate
	})
}

// NotReady names the Instances created from the template with hash (and
// not being deleted) that are not ready for the worst reason any of them
// reports, with the message of the first of them; nil when every one is
// ready. It is what a WorkloadDeployment's status.notReady says: the
// worst-instance answer every reader shows, computed once, in the cell.
func NotReady(instances []computev1alpha.Instance, hash string) *computev1alpha.InstanceBlockers {
	var blockers []Blocker
	for i := range instances {
		inst := &instances[i]
		if inst.DeletionTimestamp != nil || inst.Spec.Controller == nil || inst.Spec.Controller.TemplateHash != hash {
			continue
		}
		if b, ok := BlockerOf(inst); ok {
			blockers = append(blockers, b)
		}
	}
	worst, n, ok := Worst(blockers)
	if !ok {
		return nil
	}
	out := &computev1alpha.InstanceBlockers{Reason: worst.Reason, Message: Truncate(worst.Message), Count: int32(n)}
	slices.SortFunc(blockers, Compare)
	for _, b := range blockers {
		if b.Reason == worst.Reason && len(out.Instances) < maxNamedInstances {
			out.Instances = append(out.Instances, b.Object)
		}
	}
	return out
}
