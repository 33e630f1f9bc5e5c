package instance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// gates returns the names of an Instance's scheduling gates.
func gates(inst *computev1alpha.Instance) []string {
	if inst.Spec.Controller == nil {
		return nil
	}
	out := make([]string, 0, len(inst.Spec.Controller.SchedulingGates))
	for _, g := range inst.Spec.Controller.SchedulingGates {
		out = append(out, g.Name)
	}
	return out
}

// hasGate reports whether an Instance is held by the named gate.
func hasGate(inst *computev1alpha.Instance, name string) bool {
	return slices.Contains(gates(inst), name)
}

// quotaFailures are the QuotaGranted reasons that explain a denial or a
// fault better than "pending quota" does.
var quotaFailures = map[string]bool{
	computev1alpha.ReasonQuotaExceeded:              true,
	computev1alpha.ReasonValidationFailed:           true,
	computev1alpha.ReasonQuotaNoBudget:              true,
	computev1alpha.ReasonQuotaBackendUnavailable:    true,
	computev1alpha.ReasonQuotaProjectNotFound:       true,
	computev1alpha.ReasonQuotaNamespaceNotFound:     true,
	computev1alpha.ReasonQuotaMisconfigured:         true,
	computev1alpha.ReasonQuotaProjectIDUnresolvable: true,
}

// providerReasons are the provider sub-reasons Ready passes on as they are.
var providerReasons = map[string]bool{
	computev1alpha.ReasonImageUnavailable:   true,
	computev1alpha.ReasonInstanceCrashing:   true,
	computev1alpha.ReasonConfigurationError: true,
	computev1alpha.ReasonProvisioning:       true,
}

// quotaDisabledCondition is QuotaGranted when no quota backend is
// configured.
func quotaDisabledCondition() metav1.Condition {
	return metav1.Condition{
		Type:    computev1alpha.ConditionQuotaGranted,
		Status:  metav1.ConditionTrue,
		Reason:  computev1alpha.ReasonQuotaDisabled,
		Message: "no quota backend is configured; the instance is admitted without a quota claim",
	}
}

// quotaAdmits reports whether a QuotaGranted condition lets the Instance's
// Quota gate go: True, and evaluated for the Instance's current generation,
// so a grant for an older spec never releases a newer one.
func quotaAdmits(inst *computev1alpha.Instance, c metav1.Condition) bool {
	return c.Type == computev1alpha.ConditionQuotaGranted && c.Status == metav1.ConditionTrue && c.ObservedGeneration == inst.Generation
}

// warning is a Warning event to emit: a reason and its message.
type warning struct {
	Reason, Message string
}

// warnings returns the Warning events a status change from old to new
// deserves: QuotaGranted turning to a refusal or failure reason it did not
// have (QuotaExceeded, ValidationFailed, QuotaNoBudget and the backend
// failures), then Ready turning to a failing reason it did not have, unless
// that is the quota reason just reported (a gated Instance's Ready repeats
// it).
func warnings(old, new []metav1.Condition) []warning {
	var out []warning
	changedTo := func(t string, failing func(string) bool) *metav1.Condition {
		c := meta.FindStatusCondition(new, t)
		if c == nil || c.Status == metav1.ConditionTrue || !failing(c.Reason) {
			return nil
		}
		if prev := meta.FindStatusCondition(old, t); prev != nil && prev.Reason == c.Reason {
			return nil
		}
		return c
	}
	quotaReason := ""
	if c := changedTo(computev1alpha.ConditionQuotaGranted, func(r string) bool { return quotaFailures[r] }); c != nil {
		quotaReason = c.Reason
		out = append(out, warning{Reason: c.Reason, Message: c.Message})
	}
	if c := changedTo(computev1alpha.ConditionReady, status.Failing); c != nil && c.Reason != quotaReason {
		out = append(out, warning{Reason: c.Reason, Message: c.Message})
	}
	return out
}

// readyCondition computes an Instance's Ready condition from what is
// observed: deletion, then suspension, then the scheduling gates (the most specific reason
// one holds it), then the provider's conditions (Available True means
// ready; otherwise the worst of its known sub-reasons with its message).
// a is what the gates wait for: the QuotaGranted condition being written
// alongside, and the verdict on the referenced data.
func readyCondition(inst *computev1alpha.Instance, a admission) metav1.Condition {
	c := metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: inst.Generation}
	c.Reason, c.Message = notReadyReason(inst, a)
	if c.Reason == computev1alpha.ReasonAvailable {
		c.Status = metav1.ConditionTrue
	}
	c.Message = status.Truncate(c.Message)
	return c
}

// notReadyReason returns the reason and message of Ready; reason
// Available means the Instance is ready.
func notReadyReason(inst *computev1alpha.Instance, a admission) (string, string) {
	if inst.DeletionTimestamp != nil {
		return computev1alpha.ReasonTerminating, "the instance is being deleted"
	}
	if computev1alpha.IsSuspended(inst.Annotations) {
		return suspendedReason(inst)
	}
	if gs := gates(inst); len(gs) > 0 {
		return gateReason(gs, a)
	}
	available := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable)
	if available != nil && available.Status == metav1.ConditionTrue {
		return computev1alpha.ReasonAvailable, "the instance is available"
	}
	programmed := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed)

	var candidates []status.Blocker
	for _, pc := range []*metav1.Condition{available, programmed} {
		if pc != nil && pc.Status != metav1.ConditionTrue && providerReasons[pc.Reason] {
			candidates = append(candidates, status.Blocker{Object: pc.Type, Reason: pc.Reason, Message: pc.Message})
		}
	}
	if worst, _, ok := status.Worst(candidates); ok {
		if worst.Message == "" {
			worst.Message = fmt.Sprintf("the runtime provider reports %s", worst.Reason)
		}
		return worst.Reason, worst.Message
	}
	switch {
	case available != nil:
		return computev1alpha.ReasonNotAvailable, providerSays(available)
	case programmed != nil && programmed.Status != metav1.ConditionTrue:
		return computev1alpha.ReasonNotAvailable, providerSays(programmed)
	case programmed != nil:
		return computev1alpha.ReasonProvisioning, "the instance is programmed; waiting for it to become available"
	default:
		return computev1alpha.ReasonProvisioning, "waiting for the runtime provider to start the instance"
	}
}

// gateReason is the worst reason (internal/status) the scheduling gates
// this controller holds give: a quota denial or fault, or pending quota,
// when the Quota gate holds the Instance; pending network when the Network
// gate does; the verdict on the referenced data (a source not found ranks
// with the configuration errors, a wait for propagation below pending
// network) when the ReferencedData gate does. Any other gate alone is
// reported by name.
func gateReason(gs []string, a admission) (string, string) {
	var held []status.Blocker
	if slices.Contains(gs, computev1alpha.QuotaSchedulingGate) {
		held = append(held, quotaBlocker(a.quota))
	}
	if slices.Contains(gs, computev1alpha.NetworkSchedulingGate) {
		held = append(held, status.Blocker{Reason: computev1alpha.ReasonPendingNetwork, Message: "waiting for the instance's network to be ready"})
	}
	if slices.Contains(gs, computev1alpha.ReferencedDataSchedulingGate) {
		held = append(held, dataBlocker(a.data))
	}
	if worst, _, ok := status.Worst(held); ok {
		return worst.Reason, worst.Message
	}
	sorted := slices.Sorted(slices.Values(gs))
	return computev1alpha.ReasonSchedulingGatesPresent, "waiting for scheduling gates: " + strings.Join(sorted, ", ")
}

// quotaBlocker is why the Quota gate holds an Instance: a denial or fault,
// else pending quota.
func quotaBlocker(quota metav1.Condition) status.Blocker {
	switch {
	case quota.Status != metav1.ConditionTrue && quotaFailures[quota.Reason]:
		return status.Blocker{Reason: quota.Reason, Message: quota.Message}
	case quota.Status == metav1.ConditionTrue:
		return status.Blocker{Reason: computev1alpha.ReasonPendingQuota, Message: "quota is granted; releasing the Quota scheduling gate"}
	default:
		return status.Blocker{Reason: computev1alpha.ReasonPendingQuota, Message: "waiting for quota to be granted"}
	}
}

// providerSays renders a provider condition that has no known sub-reason.
func providerSays(c *metav1.Condition) string {
	msg := fmt.Sprintf("the runtime provider reports %s=%s", c.Type, c.Status)
	if c.Reason != "" {
		msg += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		msg += ": " + c.Message
	}
	return msg
}

// InitialReportGrace is how long after its creation an Instance may go
// without a Ready condition while nothing has happened to it yet: its claim
// is still pending, or the runtime provider has not reported. The grant or
// the provider's first report usually comes well within it and brings the
// Instance back, and one write then reports both; past it, the waiting is
// reported. The creation timestamp has second precision, so the grace is
// between 1 and 2 s in effect.
const InitialReportGrace = 2 * time.Second

// nothingToReportYet returns how long to wait before writing the first
// status of a young Instance whose status would only say that nothing has
// happened yet, or zero when it must be written now: the Instance already
// reports Ready, is being deleted, or is older than InitialReportGrace;
// quota was refused or the backend failed (reported at once); a gate other
// than Quota holds it; or the provider has reported. A grant that finds the
// Quota gate on is not reported on its own: the gate goes in the same
// reconcile, and the provider's first report, which that lets come,
// brings the Instance back to report the grant and Ready in one write.
func (r *Reconciler) nothingToReportYet(inst *computev1alpha.Instance, quota, ready metav1.Condition) time.Duration {
	if inst.DeletionTimestamp != nil || meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady) != nil {
		return 0
	}
	left := InitialReportGrace - r.Clock.Since(inst.CreationTimestamp.Time)
	if left <= 0 {
		return 0
	}
	switch {
	case quota.Status == metav1.ConditionTrue:
		onlyQuotaGate := ready.Reason == computev1alpha.ReasonPendingQuota && slices.Equal(gates(inst), []string{computev1alpha.QuotaSchedulingGate})
		if !onlyQuotaGate && ready.Reason != computev1alpha.ReasonProvisioning ||
			meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionProgrammed) != nil ||
			meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable) != nil {
			return 0
		}
	case quotaFailures[quota.Reason]:
		return 0
	}
	return left
}
