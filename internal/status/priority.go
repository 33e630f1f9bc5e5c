package status

import (
	"cmp"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// blockingReasons is THE blocking-reason priority table, worst first. When
// several Instances (or WorkloadDeployments) are not ready for different
// reasons, the one listed first here is reported: "worst reason wins".
//
// The order answers "what should the user fix first?":
//
//  1. Quota denials. Nothing runs until the project's quota changes, and no
//     amount of waiting helps. A hard denial (exceeded, invalid claim) ranks
//     above a missing budget, which ranks above the backend faults an
//     operator must fix (misconfigured, project or namespace missing,
//     project unresolvable, backend unreachable).
//  2. Instance configuration the user must change: the provider rejected the
//     configuration, cannot pull the image, or the workload crashes.
//  3. Waiting on gates: quota not yet evaluated, network not ready, other
//     scheduling gates.
//  4. Generic "not available" from the provider, instances being replaced
//     (Terminating), and finally Provisioning: the provider is working and
//     the user only has to wait.
//
// Reasons not in the table (a newer provider's, say) rank with
// NotAvailable: below every named failure and wait, above instances being
// replaced or provisioned. Reasons of
// the management plane (location not bound, deployment pending) can be
// added here so that one table ranks every level.
var blockingReasons = []string{
	computev1alpha.ReasonQuotaExceeded,
	computev1alpha.ReasonValidationFailed,
	computev1alpha.ReasonQuotaNoBudget,
	computev1alpha.ReasonQuotaMisconfigured,
	computev1alpha.ReasonQuotaProjectNotFound,
	computev1alpha.ReasonQuotaNamespaceNotFound,
	computev1alpha.ReasonQuotaProjectIDUnresolvable,
	computev1alpha.ReasonQuotaBackendUnavailable,
	computev1alpha.ReasonConfigurationError,
	computev1alpha.ReasonImageUnavailable,
	computev1alpha.ReasonInstanceCrashing,
	computev1alpha.ReasonPendingQuota,
	computev1alpha.ReasonPendingNetwork,
	computev1alpha.ReasonSchedulingGatesPresent,
	computev1alpha.ReasonNotAvailable,
	computev1alpha.ReasonNoReplicasReady,
	computev1alpha.ReasonTerminating,
	computev1alpha.ReasonProvisioning,
}

// rank maps a reason to its severity: higher is worse.
var rank = func() map[string]int {
	m := make(map[string]int, len(blockingReasons))
	for i, r := range blockingReasons {
		m[r] = len(blockingReasons) - i
	}
	return m
}()

// Severity returns how bad a blocking reason is: the higher, the worse.
// Reasons outside the priority table rank with NotAvailable.
func Severity(reason string) int {
	if s, ok := rank[reason]; ok {
		return s
	}
	return rank[computev1alpha.ReasonNotAvailable]
}

// BlockingReasons returns the priority table, worst first.
func BlockingReasons() []string {
	return append([]string(nil), blockingReasons...)
}

// Blocker is one reason something is not available, with its message and
// the name of the object that reported it.
type Blocker struct {
	// Object names what reported the reason (an Instance, a
	// WorkloadDeployment); it breaks ties deterministically.
	Object string
	// Reason is a CamelCase condition reason.
	Reason string
	// Message explains the reason.
	Message string
}

// Compare orders blockers worst first: by Severity, then by reason, object
// name and message, so that sorting is a strict order for distinct
// blockers and every caller picks the same one.
func Compare(a, b Blocker) int {
	return cmp.Or(
		cmp.Compare(Severity(b.Reason), Severity(a.Reason)),
		cmp.Compare(a.Reason, b.Reason),
		cmp.Compare(a.Object, b.Object),
		cmp.Compare(a.Message, b.Message),
	)
}

// Worst returns the worst blocker and how many blockers share its reason;
// ok is false when there are none.
func Worst(blockers []Blocker) (worst Blocker, count int, ok bool) {
	for _, b := range blockers {
		if !ok || Compare(b, worst) < 0 {
			worst, ok = b, true
		}
	}
	for _, b := range blockers {
		if b.Reason == worst.Reason {
			count++
		}
	}
	return worst, count, ok
}
