package clitest

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// State is the state an Instance is written in, as the cell and the
// runtime provider would leave it: for the printer and view tests, which
// render objects built in memory (InMemory, InstanceStatus). Command tests
// get their statuses from the real controllers on the live plane.
type State string

// Instance states users meet.
const (
	Available        State = "Available"
	Provisioning     State = "Provisioning"
	PendingQuota     State = "PendingQuota"
	QuotaExceeded    State = "QuotaExceeded"
	ImageUnavailable State = "ImageUnavailable"
	Crashing         State = "InstanceCrashing"
	ConfigError      State = "ConfigurationError"
)

// World says what state the instances of each city are in: city code →
// the state of each ordinal (the last state repeats). A city that is not
// listed is Available.
type World map[string][]State

// stateOf returns the state of ordinal i in city.
func (w World) stateOf(city string, i int) State {
	s := w[city]
	switch {
	case len(s) == 0:
		return Available
	case i < len(s):
		return s[i]
	}
	return s[len(s)-1]
}

// gated reports whether quota still holds an instance in state.
func gated(s State) bool { return s == PendingQuota || s == QuotaExceeded }

// InstanceStatus returns the status the cell and provider write for an
// instance in state.
func InstanceStatus(s State, hash, city string, i int) computev1alpha.InstanceStatus {
	now := metav1.NewTime(Epoch)
	cond := func(t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	granted := cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "quota granted")
	programmed := cond(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, "Programmed", "the instance is programmed")
	var st computev1alpha.InstanceStatus
	switch s {
	case Available:
		st.Conditions = []metav1.Condition{granted, programmed,
			cond(computev1alpha.ConditionAvailable, metav1.ConditionTrue, "Available", "the instance serves"),
			cond(computev1alpha.ConditionReady, metav1.ConditionTrue, computev1alpha.ReasonAvailable, "the instance is available")}
		st.Controller = &computev1alpha.InstanceControllerStatus{ObservedTemplateHash: hash}
		st.NetworkInterfaces = []computev1alpha.InstanceNetworkInterfaceStatus{{Assignments: computev1alpha.InstanceNetworkInterfaceAssignments{
			NetworkIP:  ptr.To(fmt.Sprintf("10.%d.0.%d", cityNumber(city), i+2)),
			ExternalIP: ptr.To(fmt.Sprintf("203.0.%d.%d", 113+cityNumber(city)%10, i+10)),
		}}}
	case Provisioning:
		st.Conditions = []metav1.Condition{granted, cond(computev1alpha.ConditionProgrammed, metav1.ConditionUnknown, "ProgrammingInProgress", ""),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the runtime provider to start the instance")}
	case PendingQuota:
		st.Conditions = []metav1.Condition{
			cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionFalse, computev1alpha.ReasonPendingEvaluation, "Awaiting capacity evaluation"),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "waiting for quota to be granted")}
	case QuotaExceeded:
		msg := "Quota exceeded for compute.datumapis.com/instances: 10 of 10 in use"
		st.Conditions = []metav1.Condition{
			cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, msg),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, msg)}
	default:
		msg := map[State]string{
			ImageUnavailable: `failed to pull image "ghcr.io/acme/web:bad": manifest unknown`,
			Crashing:         "the container exited with code 1, 5 times in a row",
			ConfigError:      "port 8080 is used by two containers",
		}[s]
		st.Conditions = []metav1.Condition{granted, programmed,
			cond(computev1alpha.ConditionAvailable, metav1.ConditionFalse, string(s), msg),
			cond(computev1alpha.ConditionReady, metav1.ConditionFalse, string(s), msg)}
	}
	return st
}

// cityNumber gives a city a small stable number for addresses.
func cityNumber(city string) int {
	n := 0
	for _, r := range city {
		n = n*7 + int(r)
	}
	return n % 200
}
