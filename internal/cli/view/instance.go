package view

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// Instance phases, the first word of an Instance's status.
const (
	PhaseAvailable   = "Available"
	PhasePending     = "Pending"
	PhaseStarting    = "Starting"
	PhaseFailed      = "Failed"
	PhaseTerminating = "Terminating"
)

// InstanceStatus is an Instance's state in words.
type InstanceStatus struct {
	// Phase is Available, Pending, Starting, Failed or Terminating.
	Phase string `json:"phase"`
	// Detail says why, in lower-case words ("quota exceeded"); empty when
	// the phase says it all.
	Detail string `json:"detail,omitempty"`
	// Reason is the condition reason the status was read from.
	Reason string `json:"reason,omitempty"`
	// Message is the condition message.
	Message string `json:"message,omitempty"`
	// Terminal is set for failures waiting will not fix: the image, the
	// configuration or the quota must change.
	Terminal bool `json:"terminal,omitempty"`
}

// String renders the status as the STATUS column shows it:
// "Pending (quota exceeded)".
func (s InstanceStatus) String() string {
	if s.Detail == "" {
		return s.Phase
	}
	return s.Phase + " (" + s.Detail + ")"
}

// Short is the status as a short lower-case phrase for progress lines:
// "waiting for quota", the detail when there is one ("quota exceeded"),
// else the phase ("starting").
func (s InstanceStatus) Short() string {
	switch {
	case s.Phase == PhasePending && (s.Detail == "quota" || s.Detail == "network" || s.Detail == "scheduling gates"):
		return "waiting for " + s.Detail
	case s.Detail != "":
		return s.Detail
	}
	return lower(s.Phase)
}

// quotaStatus maps QuotaGranted reasons (which are also Ready reasons
// while the Quota gate holds an Instance) to words.
func quotaStatus(reason string) (InstanceStatus, bool) {
	switch reason {
	case computev1alpha.ReasonQuotaExceeded:
		return InstanceStatus{Phase: PhasePending, Detail: "quota exceeded", Terminal: true}, true
	case computev1alpha.ReasonQuotaNoBudget:
		return InstanceStatus{Phase: PhasePending, Detail: "no quota budget", Terminal: true}, true
	case computev1alpha.ReasonValidationFailed:
		return InstanceStatus{Phase: PhaseFailed, Detail: "quota claim rejected", Terminal: true}, true
	case computev1alpha.ReasonQuotaBackendUnavailable:
		return InstanceStatus{Phase: PhasePending, Detail: "quota service unavailable"}, true
	case computev1alpha.ReasonQuotaMisconfigured, computev1alpha.ReasonQuotaProjectNotFound,
		computev1alpha.ReasonQuotaNamespaceNotFound, computev1alpha.ReasonQuotaProjectIDUnresolvable:
		return InstanceStatus{Phase: PhasePending, Detail: "quota misconfigured"}, true
	case computev1alpha.ReasonPendingEvaluation:
		return InstanceStatus{Phase: PhasePending, Detail: "quota"}, true
	}
	return InstanceStatus{}, false
}

// readyStatus maps the other Ready reasons to words.
func readyStatus(reason string) (InstanceStatus, bool) {
	switch reason {
	case computev1alpha.ReasonPendingQuota:
		return InstanceStatus{Phase: PhasePending, Detail: "quota"}, true
	case computev1alpha.ReasonPendingNetwork:
		return InstanceStatus{Phase: PhasePending, Detail: "network"}, true
	case computev1alpha.ReasonSchedulingGatesPresent:
		return InstanceStatus{Phase: PhasePending, Detail: "scheduling gates"}, true
	case computev1alpha.ReasonResolving, computev1alpha.ReasonAwaitingPropagation:
		// The ReferencedData gate: its ConfigMaps and Secrets are being
		// resolved or are on their way to the cell.
		return InstanceStatus{Phase: PhasePending, Detail: "waiting for referenced data"}, true
	case computev1alpha.ReasonSourceNotFound:
		return InstanceStatus{Phase: PhasePending, Detail: "source not found", Terminal: true}, true
	case computev1alpha.ReasonSourceUnauthorized:
		return InstanceStatus{Phase: PhasePending, Detail: "source unauthorized", Terminal: true}, true
	case computev1alpha.ReasonSourceTooLarge:
		return InstanceStatus{Phase: PhasePending, Detail: "source too large", Terminal: true}, true
	case computev1alpha.ReasonImageUnavailable:
		return InstanceStatus{Phase: PhaseFailed, Detail: "image unavailable", Terminal: true}, true
	case computev1alpha.ReasonInstanceCrashing:
		return InstanceStatus{Phase: PhaseFailed, Detail: "crashing", Terminal: true}, true
	case computev1alpha.ReasonConfigurationError:
		return InstanceStatus{Phase: PhaseFailed, Detail: "configuration error", Terminal: true}, true
	case computev1alpha.ReasonProvisioning:
		return InstanceStatus{Phase: PhaseStarting}, true
	case computev1alpha.ReasonNotAvailable:
		return InstanceStatus{Phase: PhasePending, Detail: "not available"}, true
	case computev1alpha.ReasonTerminating:
		return InstanceStatus{Phase: PhaseTerminating}, true
	}
	return InstanceStatus{}, false
}

// Instance returns the status of inst in words. It reads the Ready
// condition compute computes and, while quota holds the Instance, the
// QuotaGranted condition for the precise quota answer.
func Instance(inst *computev1alpha.Instance) InstanceStatus {
	if inst.DeletionTimestamp != nil {
		return InstanceStatus{Phase: PhaseTerminating}
	}
	ready := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady)
	if ready == nil {
		return InstanceStatus{Phase: PhasePending, Message: "the cell has not reported on the instance yet"}
	}
	if ready.Status == metav1.ConditionTrue {
		return InstanceStatus{Phase: PhaseAvailable, Reason: ready.Reason, Message: ready.Message}
	}
	if ready.Reason == computev1alpha.ReasonPendingQuota {
		if q := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted); q != nil && q.Status != metav1.ConditionTrue {
			if s, ok := quotaStatus(q.Reason); ok {
				s.Reason, s.Message = q.Reason, firstNonEmpty(q.Message, ready.Message)
				return s
			}
		}
	}
	s, ok := quotaStatus(ready.Reason)
	if !ok {
		s, ok = readyStatus(ready.Reason)
	}
	if !ok {
		s = InstanceStatus{Phase: PhasePending, Detail: cmdutil.Humanize(ready.Reason)}
	}
	s.Reason, s.Message = ready.Reason, ready.Message
	return s
}

// InstanceType returns the instance type of inst.
func InstanceType(inst *computev1alpha.Instance) string {
	return inst.Spec.Runtime.Resources.InstanceType
}

// InstanceIP returns the address users reach inst at: the first external
// IP, else the first network IP, else "".
func InstanceIP(inst *computev1alpha.Instance) string {
	var network string
	for _, nic := range inst.Status.NetworkInterfaces {
		if ip := nic.Assignments.ExternalIP; ip != nil && *ip != "" {
			return *ip
		}
		if ip := nic.Assignments.NetworkIP; ip != nil && *ip != "" && network == "" {
			network = *ip
		}
	}
	return network
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// lower lower-cases an ASCII word.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
