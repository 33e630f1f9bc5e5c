package status

import (
	"cmp"
	"slices"

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
//  2. Instance configuration the user must change: a ConfigMap or Secret
//     the template references does not exist, may not be read or is too
//     large (the referenced-data reasons: nothing runs until the project
//     changes), the provider rejected the configuration, cannot pull the
//     image, or the workload crashes.
//  3. Waiting on gates: quota not yet evaluated, network not ready, the
//     referenced data not yet resolved by the management plane or not yet
//     propagated to the cell, other scheduling gates.
//     A suspended instance (Suspended) waits too, for its workload to be
//     resumed: a deliberate stop, never a failure (Failing is false, so
//     it neither warns nor halts a rollout), ranked first of the waits
//     after quota because nothing else starts it.
//  4. Generic "not available" from the provider, instances being replaced
//     (Terminating), and finally Provisioning: the provider is working and
//     the user only has to wait.
//
// The management plane's reasons for a city join the same table, so one
// ranking serves every level (Instance → WorkloadDeployment → placement →
// Workload): a name taken by another Workload's deployment or a city not
// bound to the project needs the user to act and ranks above everything; a
// cell that has not been heard from (CellUnreachable) comes next, because
// nothing else reported about that city can be trusted until it is; a
// Location that is not ready is an operator's fault and ranks with the
// quota backend's, and so does a network the networking service refuses
// (an exhausted address pool); a deployment still being created or not yet reported by
// its cell ranks below every cell reason, and a deployment scaled to zero
// last of all.
//
// Reasons not in the table (a newer provider's, say) rank with
// NotAvailable: below every named failure and wait, above instances being
// replaced or provisioned.
var blockingReasons = []string{
	computev1alpha.ReasonDeploymentConflict,
	computev1alpha.ReasonLocationNotBound,
	computev1alpha.ReasonCellUnreachable,
	computev1alpha.ReasonQuotaExceeded,
	computev1alpha.ReasonValidationFailed,
	computev1alpha.ReasonQuotaNoBudget,
	computev1alpha.ReasonQuotaMisconfigured,
	computev1alpha.ReasonQuotaProjectNotFound,
	computev1alpha.ReasonQuotaNamespaceNotFound,
	computev1alpha.ReasonQuotaProjectIDUnresolvable,
	computev1alpha.ReasonQuotaBackendUnavailable,
	computev1alpha.ReasonLocationNotReady,
	computev1alpha.ReasonNetworkUnavailable,
	computev1alpha.ReasonSourceNotFound,
	computev1alpha.ReasonSourceUnauthorized,
	computev1alpha.ReasonSourceTooLarge,
	computev1alpha.ReasonConfigurationError,
	computev1alpha.ReasonImageUnavailable,
	computev1alpha.ReasonInstanceCrashing,
	computev1alpha.ReasonPendingQuota,
	computev1alpha.ReasonSuspended,
	computev1alpha.ReasonPendingNetwork,
	computev1alpha.ReasonResolving,
	computev1alpha.ReasonAwaitingPropagation,
	computev1alpha.ReasonSchedulingGatesPresent,
	computev1alpha.ReasonNotAvailable,
	computev1alpha.ReasonNoReplicasReady,
	computev1alpha.ReasonTerminating,
	computev1alpha.ReasonProvisioning,
	computev1alpha.ReasonDeploymentPending,
	computev1alpha.ReasonNoReplicasDesired,
}

// progressingReasons is the table of what is under way, most significant
// first: a deployment still pending in its cell, then a rollout replacing
// Instances, then creating, then removing them, and last replicas that
// exist with the current template but are not running it yet (held by
// quota, say). A Workload or placement reports the first reason any of its
// cities reports.
var progressingReasons = []string{
	computev1alpha.ReasonDeploymentPending,
	computev1alpha.ReasonRollingUpdate,
	computev1alpha.ReasonScalingUp,
	computev1alpha.ReasonScalingDown,
	computev1alpha.ReasonReplicasNotReady,
}

// unrankedReasons are the reasons the API declares that never say why
// something is unavailable or still moving: they report health (Available,
// AllReplicasReady, RolloutComplete …), or they belong to a condition that
// is not summarised across objects (QuotaGranted's PendingEvaluation is
// reported as PendingQuota on Ready; Federated's reasons stay on the
// project WorkloadDeployment), or they are the summary when there is
// nothing to rank (NoDeployments). Every reason the API declares is in
// exactly one of blockingReasons, progressingReasons (DeploymentPending is
// in both) or here; the tests hold the API to that.
var unrankedReasons = []string{
	computev1alpha.ReasonAvailable,
	computev1alpha.ReasonReplicasAvailable,
	computev1alpha.ReasonAllReplicasReady,
	computev1alpha.ReasonRolloutComplete,
	computev1alpha.ReasonQuotaAvailable,
	computev1alpha.ReasonQuotaDisabled,
	computev1alpha.ReasonPendingEvaluation,
	computev1alpha.ReasonNoDeployments,
	// FailedOver's reasons: a Workload-level summary of its own.
	computev1alpha.ReasonFailedOver,
	computev1alpha.ReasonFailoverPending,
	computev1alpha.ReasonNoFailover,
	computev1alpha.ReasonFederated,
	computev1alpha.ReasonFederationFailed,
	// ReferencedDataReady's True reason ("Ready"): its False reasons are
	// ranked, as Ready reports them for an Instance the gate holds.
	computev1alpha.ReasonReferencedDataReady,
	// A city dropped from the placements is reported while its deployment
	// goes, outside every condition; a Workload whose inputs cannot be
	// read says so on its own conditions, never a city's.
	computev1alpha.ReasonDeploymentRemoving,
	computev1alpha.ReasonObservationFailed,
	// A rollout across cities reports these on the Workload's Progressing
	// condition and in status.rollout; they summarise the rollout's plan,
	// not the cities' state, so they are never ranked across objects.
	computev1alpha.ReasonRolloutHalted,
	computev1alpha.ReasonRolloutPaused,
	computev1alpha.ReasonRolloutAwaitingApproval,
	computev1alpha.ReasonWaveProgressing,
	computev1alpha.ReasonProgressDeadlineExceeded,
}

// ProgressingReasons returns the progressing table, most significant first.
func ProgressingReasons() []string {
	return append([]string(nil), progressingReasons...)
}

// CompareProgress orders progressing blockers most significant first: by
// the progressing table (reasons outside it rank last, with
// ReplicasNotReady), then by object name.
func CompareProgress(a, b Blocker) int {
	return cmp.Or(
		cmp.Compare(progressRank(b.Reason), progressRank(a.Reason)),
		cmp.Compare(a.Object, b.Object),
		cmp.Compare(a.Reason, b.Reason),
	)
}

// progressRank maps a progressing reason to its rank: higher comes first.
func progressRank(reason string) int {
	if i := slices.Index(progressingReasons, reason); i >= 0 {
		return len(progressingReasons) - i
	}
	return 1
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
