package workloaddeployment

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Suspension (api/v1alpha/suspension.go). While a deployment is suspended
// the cell:
//
//   - puts the suspension annotation on each of its Instances, which the
//     runtime provider stops (without deleting them) and the Instance
//     controller then reports suspended;
//   - creates and deletes no Instance: a scale or a template change waits
//     for the deployment to be resumed, and the Instances keep their names
//     and quota claims;
//   - reports status.suspended once every Instance is stopped, with
//     Available, ReplicasReady and Progressing False, reason Suspended.
//
// Resuming takes the annotation off the Instances: the provider starts
// them again, under the same names, and the planner carries on.

// suspensionPatches returns the Instances whose suspension annotation
// differs from the deployment's, and the value each must get (nil:
// removed).
func suspensionPatches(suspended bool, instances []computev1alpha.Instance) []*computev1alpha.Instance {
	var out []*computev1alpha.Instance
	for i := range instances {
		inst := &instances[i]
		if inst.DeletionTimestamp == nil && computev1alpha.IsSuspended(inst.Annotations) != suspended {
			out = append(out, inst)
		}
	}
	return out
}

// applySuspension puts the deployment's suspension on its Instances (or
// takes it off) with a metadata-only merge patch per Instance; the UID in
// the patch makes it fail rather than mark a same-named successor. A
// failure is reported with a PauseFailed event and returned, so it is
// retried; nothing is deleted for it.
func (r *Reconciler) applySuspension(ctx context.Context, s *scope) error {
	suspended := computev1alpha.IsSuspended(s.wd.Annotations)
	var value any
	action := "Resuming"
	if suspended {
		value, action = computev1alpha.SuspendedAnnotationValue, "Suspending"
	}
	return inBatches(ctx, suspensionPatches(suspended, s.instances), func(ctx context.Context, inst *computev1alpha.Instance) error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         inst.UID,
			"annotations": map[string]any{computev1alpha.SuspendedAnnotation: value},
		}})
		if err != nil {
			return fmt.Errorf("failed to encode the suspension of Instance %s: %w", inst.Name, err)
		}
		if err := r.Client.Patch(ctx, inst.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			r.Recorder.Eventf(s.wd, inst, corev1.EventTypeWarning, computev1alpha.EventPauseFailed, action,
				"failed to mark Instance %s %s: %v", inst.Name, map[bool]string{true: "suspended", false: "resumed"}[suspended], err)
			return fmt.Errorf("failed to mark Instance %s %s: %w", inst.Name, map[bool]string{true: "suspended", false: "resumed"}[suspended], err)
		}
		return nil
	})
}

// suspensionStatus says whether the deployment is suspended and every
// Instance (not being deleted) confirmed stopped; stopped and total count
// them.
func suspensionStatus(wd *computev1alpha.WorkloadDeployment, instances []computev1alpha.Instance) (suspended bool, stopped, total int) {
	for i := range instances {
		inst := &instances[i]
		if isDeleting(inst) {
			continue
		}
		total++
		if inst.Status.Suspended && computev1alpha.IsSuspended(inst.Annotations) {
			stopped++
		}
	}
	return computev1alpha.IsSuspended(wd.Annotations) && stopped == total, stopped, total
}

// suspendedConditions are Available, Progressing and ReplicasReady of a
// suspended deployment: False, reason Suspended.
func suspendedConditions(suspended bool, stopped, total int) []metav1.Condition {
	msg := fmt.Sprintf("the deployment is suspended: %d of %d instances stopped, none deleted", stopped, total)
	if suspended {
		msg = fmt.Sprintf("the deployment is suspended: all %d instances stopped and kept, with their names and quota claims", total)
	}
	out := make([]metav1.Condition, 0, 3)
	for _, t := range []string{computev1alpha.ConditionAvailable, computev1alpha.ConditionReplicasReady} {
		out = append(out, metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonSuspended, Message: msg})
	}
	return append(out, metav1.Condition{Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonSuspended,
		Message: "the deployment is suspended: no instance is created, replaced or removed until it is resumed"})
}

// suspensionEvent emits ProjectPaused when a status write turned the
// deployment suspended, and ProjectResumed when it cleared a suspension
// that was lifted.
func (r *Reconciler) suspensionEvent(wd *computev1alpha.WorkloadDeployment, was, is bool, total int) {
	switch {
	case !was && is:
		r.Recorder.Eventf(wd, nil, corev1.EventTypeNormal, computev1alpha.EventProjectPaused, "Suspending",
			"suspended: all %d instances stopped, none deleted", total)
	case was && !is && !computev1alpha.IsSuspended(wd.Annotations):
		r.Recorder.Eventf(wd, nil, corev1.EventTypeNormal, computev1alpha.EventProjectResumed, "Resuming",
			"resumed: starting %d instances again under the same names", total)
	}
}
