package workloaddeployment

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/status"
)

// desiredReplicas returns spec.replicas when set, else minReplicas.
func desiredReplicas(wd *computev1alpha.WorkloadDeployment) int32 {
	if wd.Spec.Replicas != nil {
		return max(*wd.Spec.Replicas, 0)
	}
	return max(wd.Spec.ScaleSettings.MinReplicas, 0)
}

// maxUnavailable returns the rollout budget of wd; zero means the default.
func maxUnavailable(wd *computev1alpha.WorkloadDeployment) int32 {
	if rs := wd.Spec.RolloutStrategy; rs != nil && rs.MaxUnavailable != nil {
		return *rs.MaxUnavailable
	}
	return 0
}

// selector returns the label selector of wd's Instances, for the scale
// subresource.
func selector(wd *computev1alpha.WorkloadDeployment) string {
	return labels.SelectorFromSet(labels.Set{computev1alpha.WorkloadDeploymentUIDLabel: string(wd.UID)}).String()
}

// isReady reports whether an Instance's Ready condition is True.
func isReady(i *computev1alpha.Instance) bool {
	return meta.IsStatusConditionTrue(i.Status.Conditions, computev1alpha.ConditionReady)
}

// isDeleting reports whether an Instance is being deleted.
func isDeleting(i *computev1alpha.Instance) bool {
	return i.DeletionTimestamp != nil
}

// specHash returns the template hash an Instance was created from.
func specHash(i *computev1alpha.Instance) string {
	if i.Spec.Controller == nil {
		return ""
	}
	return i.Spec.Controller.TemplateHash
}

// currentHashes spells, in each Instance of items, a template hash that
// names the deployment's template in the earlier spelling (an Instance
// created before SHA-256: names.TemplateHashes) in the current one, so the
// planner and the counts take it as up to date and nothing is replaced on
// upgrade. It replaces the Instances' controller pointers, never what they
// point to (the items may share them with the cache), and the Instances are
// never written from (only metadata patches are).
func currentHashes(items []computev1alpha.Instance, h names.TemplateHashes) {
	for i := range items {
		inst := &items[i]
		if c := inst.Spec.Controller; c != nil && c.TemplateHash != h.Current && h.Names(c.TemplateHash) {
			spec := *c
			spec.TemplateHash = h.Current
			inst.Spec.Controller = &spec
		}
		if c := inst.Status.Controller; c != nil && c.ObservedTemplateHash != h.Current && h.Names(c.ObservedTemplateHash) {
			st := *c
			st.ObservedTemplateHash = h.Current
			inst.Status.Controller = &st
		}
	}
}

// observedHash returns the template hash the provider has applied.
func observedHash(i *computev1alpha.Instance) string {
	if i.Status.Controller == nil {
		return ""
	}
	return i.Status.Controller.ObservedTemplateHash
}

// computeStatus derives the status of wd from the Instances it owns and the
// planner's assessment of them; a suspended deployment reports its
// suspension instead (suspendedConditions). It leaves ObservedGeneration to the caller,
// which only advances it when the reconcile succeeded.
func computeStatus(wd *computev1alpha.WorkloadDeployment, instances []computev1alpha.Instance, a instanceplan.Assessment, now metav1.Time) computev1alpha.WorkloadDeploymentStatus {
	st := *wd.Status.DeepCopy()
	st.Selector = selector(wd)
	st.TemplateHash = a.TemplateHash
	st.ReplicaCounts = countReplicas(instances, a.TemplateHash, int32(a.Replicas))
	st.NotReady = status.NotReady(instances, a.TemplateHash)

	conds := []metav1.Condition{
		availableCondition(instances, st.ReplicaCounts),
		progressingCondition(a, st.ReplicaCounts),
		replicasReadyCondition(st.NotReady, st.ReplicaCounts),
	}
	suspended, stopped, total := suspensionStatus(wd, instances)
	st.Suspended = suspended
	if computev1alpha.IsSuspended(wd.Annotations) {
		conds = suspendedConditions(suspended, stopped, total)
	}
	for _, c := range conds {
		c.ObservedGeneration = wd.Generation
		c.Message = status.Truncate(c.Message)
		status.SetCondition(&st.Conditions, c, now)
	}
	return st
}

// programmed reports whether the provider has programmed an Instance:
// Programmed True, or False only because the cell does not enforce its
// network policy (NetworkPolicyNotEnforced: it runs, the operator's to
// fix), which holds back no rollout.
func programmed(inst *computev1alpha.Instance) bool {
	c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == computev1alpha.ReasonNetworkPolicyNotEnforced)
}

// countReplicas counts the Instances that are not being deleted.
func countReplicas(instances []computev1alpha.Instance, hash string, desired int32) computev1alpha.ReplicaCounts {
	c := computev1alpha.ReplicaCounts{DesiredReplicas: desired}
	for i := range instances {
		inst := &instances[i]
		if isDeleting(inst) {
			continue
		}
		c.Replicas++
		updated := specHash(inst) == hash && observedHash(inst) == hash
		if updated {
			c.UpdatedReplicas++
			if programmed(inst) {
				c.CurrentReplicas++
			}
		}
		if isReady(inst) {
			c.ReadyReplicas++
		}
	}
	return c
}

// availableCondition is True when any replica is ready; otherwise it
// carries the worst blocking reason across the Instances (see
// internal/status) with the message of the first Instance reporting it.
func availableCondition(instances []computev1alpha.Instance, c computev1alpha.ReplicaCounts) metav1.Condition {
	cond := metav1.Condition{Type: computev1alpha.ConditionAvailable}
	if c.ReadyReplicas > 0 {
		cond.Status = metav1.ConditionTrue
		cond.Reason = computev1alpha.ReasonReplicasAvailable
		cond.Message = fmt.Sprintf("%d of %d replicas ready", c.ReadyReplicas, c.DesiredReplicas)
		return cond
	}
	cond.Status = metav1.ConditionFalse
	worst, n, ok := status.Worst(blockers(instances))
	switch {
	case ok:
		cond.Reason, cond.Message = worst.Reason, status.DescribeWorst(worst, n)
	case c.DesiredReplicas == 0:
		cond.Reason = computev1alpha.ReasonNoReplicasDesired
		cond.Message = "the deployment is scaled to zero replicas"
	default:
		cond.Reason = computev1alpha.ReasonNoReplicasReady
		cond.Message = fmt.Sprintf("0 of %d replicas ready; no instance exists yet", c.DesiredReplicas)
	}
	return cond
}

// blockers lists why each Instance that is not ready is not.
func blockers(instances []computev1alpha.Instance) []status.Blocker {
	var out []status.Blocker
	for i := range instances {
		if b, ok := status.BlockerOf(&instances[i]); ok {
			out = append(out, b)
		}
	}
	return out
}

// progressingCondition is True while the controller still has Instances to
// create, remove or replace, and while Instances that exist with the
// current template are not running it yet (held by quota, say): a rollout
// is complete only when every desired replica runs the current template.
func progressingCondition(a instanceplan.Assessment, c computev1alpha.ReplicaCounts) metav1.Condition {
	cond := metav1.Condition{Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionTrue}
	outdated, terminating := 0, 0
	for _, s := range a.Slots {
		switch {
		case s.Instance.Deleting:
			terminating++
		case a.Outdated(s.Instance):
			outdated++
		}
	}
	switch {
	case outdated > 0:
		cond.Reason = computev1alpha.ReasonRollingUpdate
		cond.Message = fmt.Sprintf("%d of %d replicas run an old template and will be replaced", outdated, a.Replicas)
	case len(a.Strays) > 0:
		cond.Reason = computev1alpha.ReasonScalingDown
		cond.Message = fmt.Sprintf("removing %d instance(s) beyond the %d desired replicas", len(a.Strays), a.Replicas)
	case len(a.Slots) < a.Replicas:
		cond.Reason = computev1alpha.ReasonScalingUp
		cond.Message = fmt.Sprintf("%d of %d replicas created", len(a.Slots), a.Replicas)
	case terminating > 0:
		cond.Reason = computev1alpha.ReasonRollingUpdate
		cond.Message = fmt.Sprintf("waiting for %d replaced instance(s) to terminate", terminating)
	case c.UpdatedReplicas < c.DesiredReplicas:
		cond.Reason = computev1alpha.ReasonReplicasNotReady
		cond.Message = fmt.Sprintf("%d of %d replicas run the current template; the others have not started it yet", c.UpdatedReplicas, c.DesiredReplicas)
	default:
		cond.Status = metav1.ConditionFalse
		cond.Reason = computev1alpha.ReasonRolloutComplete
		cond.Message = fmt.Sprintf("all %d replicas exist with the current template", a.Replicas)
	}
	return cond
}

// replicasReadyCondition is True when every desired replica is ready and
// up to date and no other Instance remains. When it is False because an
// Instance of the current template fails for a reason a person must act on
// (it cannot pull its image, crashes, is refused quota …), the worst such
// reason is the condition's reason, with that Instance's message: while
// older Instances still serve, Available stays True, and this is where a
// failing new revision shows (a rollout across cities halts on it).
// Otherwise the reason is ReplicasNotReady. notReady is the worst reason an
// Instance of the current template is not ready for (status.NotReady).
func replicasReadyCondition(notReady *computev1alpha.InstanceBlockers, c computev1alpha.ReplicaCounts) metav1.Condition {
	cond := metav1.Condition{Type: computev1alpha.ConditionReplicasReady}
	msg := fmt.Sprintf("%d of %d replicas ready, %d up to date", c.ReadyReplicas, c.DesiredReplicas, c.UpdatedReplicas)
	if c.ReadyReplicas == c.DesiredReplicas && c.UpdatedReplicas == c.DesiredReplicas && c.Replicas == c.DesiredReplicas {
		cond.Status = metav1.ConditionTrue
		cond.Reason = computev1alpha.ReasonAllReplicasReady
		cond.Message = msg
		return cond
	}
	cond.Status = metav1.ConditionFalse
	cond.Reason = computev1alpha.ReasonReplicasNotReady
	cond.Message = msg
	if notReady != nil && status.Failing(notReady.Reason) {
		cond.Reason = notReady.Reason
		cond.Message = fmt.Sprintf("%s; instance %s: %s", msg, notReady.Instances[0], notReady.Message)
	}
	return cond
}
