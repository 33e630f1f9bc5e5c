package view

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/status"
)

// InstanceStatus is an Instance's state in words.
type InstanceStatus struct {
	// Phase is Available, Pending, Starting, Failed or Terminating: the
	// reason registry's phases (status.PhaseAvailable, …).
	Phase string `json:"phase"`
	// Detail says why, in lower-case words ("quota exceeded"); empty when
	// the phase says it all.
	Detail string `json:"detail,omitempty"`
	// Reason is the condition reason the status was read from.
	Reason string `json:"reason,omitempty"`
	// Message is the condition message.
	Message string `json:"message,omitempty"`
}

// String renders the status as the STATUS column shows it:
// "Pending (quota exceeded)".
func (s InstanceStatus) String() string {
	if s.Detail == "" {
		return s.Phase
	}
	return s.Phase + " (" + s.Detail + ")"
}

// InstanceWords is the status in words of an Instance whose Ready
// condition is False for reason: the registry's phase and detail; a reason
// the registry does not know is Pending, spelled out.
func InstanceWords(reason string) InstanceStatus {
	r, ok := status.Lookup(reason)
	if !ok || r.Phase == "" {
		return InstanceStatus{Phase: status.PhasePending, Detail: cmdutil.Humanize(reason), Reason: reason}
	}
	return InstanceStatus{Phase: r.Phase, Detail: r.Detail, Reason: reason}
}

// Instance returns the status of inst in words. It reads the Ready
// condition compute computes and, while quota holds the Instance, the
// QuotaGranted condition for the precise quota answer.
func Instance(inst *computev1alpha.Instance) InstanceStatus {
	if inst.DeletionTimestamp != nil {
		return InstanceStatus{Phase: status.PhaseTerminating}
	}
	ready := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady)
	switch {
	case ready == nil:
		return InstanceStatus{Phase: status.PhasePending, Message: "the cell has not reported on the instance yet"}
	case ready.Status == metav1.ConditionTrue:
		return InstanceStatus{Phase: status.PhaseAvailable, Reason: ready.Reason, Message: ready.Message}
	}
	reason, message := ready.Reason, ready.Message
	if q := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted); reason == computev1alpha.ReasonPendingQuota &&
		q != nil && q.Status != metav1.ConditionTrue && q.Reason != "" {
		reason, message = q.Reason, firstNonEmpty(q.Message, message)
	}
	s := InstanceWords(reason)
	s.Message = message
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
