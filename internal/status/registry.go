package status

import (
	"cmp"
	"fmt"
	"slices"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Instance phases, the first word of an Instance's status in words.
const (
	PhaseAvailable   = "Available"
	PhasePending     = "Pending"
	PhaseStarting    = "Starting"
	PhaseFailed      = "Failed"
	PhaseTerminating = "Terminating"
)

// Row is the registry's one answer about a reason the API declares.
type Row struct {
	// Reason is the CamelCase condition reason.
	Reason string
	// Blocking is set for a reason that says why something is not
	// available; such reasons are ranked by their place in the registry,
	// worst first ("worst reason wins").
	Blocking bool
	// Progress ranks a reason that says what is under way (Progressing
	// True), higher first; 0 for the others.
	Progress int
	// Failing is set when a person must act (the user, or the operator of
	// the platform): the cells and the management plane raise a Warning
	// event and write the status at once.
	Failing bool
	// Terminal is set when waiting cannot get the object to its spec: the
	// user must change the Workload, the project or its quota. A city an
	// Instance of the current template reports it for is Failed, the
	// Workload's Progressing is False with it, and a CLI wait ends with
	// it (exit 1). A failing reason that is not terminal (an operator's
	// fault that clears by itself once fixed, a cell not heard from) is
	// waited out.
	Terminal bool
	// HaltsRollout is set when a city at the new revision reporting it
	// halts a rollout across cities (spec.rollout).
	HaltsRollout bool
	// Phase is the Instance phase an Instance reporting the reason is in;
	// empty for a reason only deployments and cities report.
	Phase string
	// Detail is the lower-case detail shown after the phase: "Pending
	// (quota exceeded)".
	Detail string
	// Words is the short phrase a progress line shows for a city in that
	// state: "waiting for quota"; Detail when empty.
	Words string
	// Hint returns the next steps; nil when waiting is all there is to do.
	Hint func(Hints) []string
}

// registry is THE table of reasons: one row per reason the API declares
// (a test holds it to that). The blocking rows come first, worst first: the
// order answers "what should the user fix first?":
//
//  1. A name taken by another Workload's deployment, a city not bound to
//     the project: the user must act, and nothing else about the city
//     matters. A cell that has not been heard from comes next, because
//     nothing reported about its city can be trusted until it is.
//  2. Quota denials. Nothing runs until the project's quota changes: a
//     hard denial (exceeded, invalid claim) ranks above a missing budget,
//     which ranks above the backend faults an operator must fix
//     (misconfigured, project or namespace missing, project unresolvable,
//     backend unreachable). A Location that is not ready and a network the
//     networking service refuses are an operator's too.
//  3. Instance configuration the user must change: a ConfigMap or Secret
//     the template references does not exist, may not be read or is too
//     large, the provider rejected the configuration, cannot pull the
//     image, or the workload crashes.
//  4. Waits on gates: quota not yet evaluated, a suspended instance (a
//     deliberate stop, never a failure), the network, the referenced data
//     being resolved or propagated, other scheduling gates.
//  5. Generic "not available" from the provider (where reasons the
//     registry does not know rank), no replica ready yet, instances being
//     replaced, provisioning, a deployment its cell has not reported yet,
//     and last a deployment scaled to zero.
//
// Then the reasons that say what is under way, and last those that rank
// nothing: health (Available, AllReplicasReady, RolloutComplete …), the
// summaries of conditions that are not ranked across objects (Federated,
// FailedOver, the rollout's plan), and reasons of other conditions.
var registry = []Row{
	{Reason: computev1alpha.ReasonDeploymentConflict, Blocking: true, Failing: true, Terminal: true, Words: "name conflict", Hint: conflictHint},
	{Reason: computev1alpha.ReasonLocationNotBound, Blocking: true, Failing: true, Terminal: true, Words: "not enabled", Hint: notBoundHint},
	{Reason: computev1alpha.ReasonCellUnreachable, Blocking: true, Failing: true, Words: "unreachable", Hint: unreachableHint},
	{Reason: computev1alpha.ReasonQuotaExceeded, Blocking: true, Failing: true, Terminal: true, Phase: PhasePending, Detail: "quota exceeded", Hint: quotaExceededHint},
	{Reason: computev1alpha.ReasonValidationFailed, Blocking: true, Failing: true, Terminal: true, Phase: PhaseFailed, Detail: "quota claim rejected", Hint: validationHint},
	{Reason: computev1alpha.ReasonQuotaNoBudget, Blocking: true, Failing: true, Terminal: true, Phase: PhasePending, Detail: "no quota budget", Hint: noBudgetHint},
	{Reason: computev1alpha.ReasonQuotaMisconfigured, Blocking: true, Failing: true, Phase: PhasePending, Detail: "quota misconfigured", Hint: quotaBackendHint},
	{Reason: computev1alpha.ReasonQuotaProjectNotFound, Blocking: true, Failing: true, Phase: PhasePending, Detail: "quota misconfigured", Hint: quotaBackendHint},
	{Reason: computev1alpha.ReasonQuotaNamespaceNotFound, Blocking: true, Failing: true, Phase: PhasePending, Detail: "quota misconfigured", Hint: quotaBackendHint},
	{Reason: computev1alpha.ReasonQuotaProjectIDUnresolvable, Blocking: true, Failing: true, Phase: PhasePending, Detail: "quota misconfigured", Hint: quotaBackendHint},
	{Reason: computev1alpha.ReasonQuotaBackendUnavailable, Blocking: true, Failing: true, Phase: PhasePending, Detail: "quota service unavailable", Hint: quotaBackendHint},
	{Reason: computev1alpha.ReasonLocationNotReady, Blocking: true, Failing: true, Words: "waiting for location", Hint: locationNotReadyHint},
	{Reason: computev1alpha.ReasonNetworkUnavailable, Blocking: true, Failing: true, Phase: PhasePending, Detail: "network unavailable"},
	{Reason: computev1alpha.ReasonSourceNotFound, Blocking: true, Failing: true, Terminal: true, Phase: PhasePending, Detail: "source not found", Hint: sourceNotFoundHint},
	{Reason: computev1alpha.ReasonSourceUnauthorized, Blocking: true, Failing: true, Terminal: true, Phase: PhasePending, Detail: "source unauthorized", Hint: sourceUnauthorizedHint},
	{Reason: computev1alpha.ReasonSourceTooLarge, Blocking: true, Failing: true, Terminal: true, Phase: PhasePending, Detail: "source too large", Hint: sourceTooLargeHint},
	{Reason: computev1alpha.ReasonConfigurationError, Blocking: true, Failing: true, Terminal: true, HaltsRollout: true, Phase: PhaseFailed, Detail: "configuration error", Hint: configurationHint},
	{Reason: computev1alpha.ReasonImageUnavailable, Blocking: true, Failing: true, Terminal: true, HaltsRollout: true, Phase: PhaseFailed, Detail: "image unavailable", Hint: imageHint},
	{Reason: computev1alpha.ReasonInstanceCrashing, Blocking: true, Failing: true, Terminal: true, HaltsRollout: true, Phase: PhaseFailed, Detail: "crashing", Hint: crashingHint},
	{Reason: computev1alpha.ReasonPendingQuota, Blocking: true, Phase: PhasePending, Detail: "quota", Words: "waiting for quota"},
	{Reason: computev1alpha.ReasonSuspended, Blocking: true, Phase: PhasePending, Detail: "suspended"},
	{Reason: computev1alpha.ReasonPendingNetwork, Blocking: true, Phase: PhasePending, Detail: "network", Words: "waiting for network"},
	{Reason: computev1alpha.ReasonResolving, Blocking: true, Phase: PhasePending, Detail: "waiting for referenced data"},
	{Reason: computev1alpha.ReasonAwaitingPropagation, Blocking: true, Phase: PhasePending, Detail: "waiting for referenced data"},
	{Reason: computev1alpha.ReasonSchedulingGatesPresent, Blocking: true, Phase: PhasePending, Detail: "scheduling gates", Words: "waiting for scheduling gates"},
	{Reason: computev1alpha.ReasonNotAvailable, Blocking: true, Phase: PhasePending, Detail: "not available"},
	{Reason: computev1alpha.ReasonNoReplicasReady, Blocking: true, Words: "starting"},
	{Reason: computev1alpha.ReasonTerminating, Blocking: true, Phase: PhaseTerminating, Words: "terminating"},
	{Reason: computev1alpha.ReasonProvisioning, Blocking: true, Phase: PhaseStarting, Words: "starting"},
	{Reason: computev1alpha.ReasonDeploymentPending, Blocking: true, Progress: 5, Words: "syncing"},
	{Reason: computev1alpha.ReasonNoReplicasDesired, Blocking: true, Words: "scaled to zero"},

	// What is under way, most significant first: a deployment still
	// pending in its cell (above), a rollout replacing Instances, creating,
	// then removing them, and last replicas that exist with the current
	// template but are not running it yet (held by quota, say).
	{Reason: computev1alpha.ReasonRollingUpdate, Progress: 4, Words: "updating"},
	{Reason: computev1alpha.ReasonScalingUp, Progress: 3, Words: "starting"},
	{Reason: computev1alpha.ReasonScalingDown, Progress: 2, Words: "scaling down"},
	{Reason: computev1alpha.ReasonReplicasNotReady, Progress: 1, Words: "starting"},

	// Health, and summaries never ranked across objects.
	{Reason: computev1alpha.ReasonAvailable, Phase: PhaseAvailable},
	{Reason: computev1alpha.ReasonReplicasAvailable},
	{Reason: computev1alpha.ReasonAllReplicasReady, Words: "ready"},
	{Reason: computev1alpha.ReasonRolloutComplete},
	{Reason: computev1alpha.ReasonQuotaAvailable},
	{Reason: computev1alpha.ReasonQuotaDisabled},
	// QuotaGranted's wait: Ready reports it as PendingQuota.
	{Reason: computev1alpha.ReasonPendingEvaluation, Phase: PhasePending, Detail: "quota", Words: "waiting for quota"},
	{Reason: computev1alpha.ReasonNoDeployments},
	{Reason: computev1alpha.ReasonFailedOver},
	{Reason: computev1alpha.ReasonFailoverPending},
	{Reason: computev1alpha.ReasonNoFailover},
	{Reason: computev1alpha.ReasonFederated},
	{Reason: computev1alpha.ReasonFederationFailed},
	// ReferencedDataReady's True reason: its False reasons rank above.
	{Reason: computev1alpha.ReasonReferencedDataReady},
	// A city dropped from the placements, outside every condition; a
	// Workload whose inputs cannot be read says so on its own conditions.
	{Reason: computev1alpha.ReasonDeploymentRemoving, Words: "removing"},
	{Reason: computev1alpha.ReasonObservationFailed},
	// The project plane does not run compute's admission: an operator must
	// register the webhooks; the Workload waits, then goes on.
	{Reason: computev1alpha.ReasonAdmissionNotEnforced, Failing: true, Hint: admissionHint},
	// The rollout across cities, on the Workload's Progressing condition:
	// they summarise the rollout's plan, not the cities' state.
	{Reason: computev1alpha.ReasonRolloutHalted, Failing: true, Terminal: true, Hint: haltedHint},
	{Reason: computev1alpha.ReasonRolloutPaused},
	{Reason: computev1alpha.ReasonRolloutAwaitingApproval},
	{Reason: computev1alpha.ReasonWaveProgressing},
	{Reason: computev1alpha.ReasonProgressDeadlineExceeded},
	// A city's autoscaler (AutoscalingReady, AutoscalingLimited): never
	// ranked with availability, never the end of a wait. Metrics a cell
	// does not serve and an autoscaler compute did not create are an
	// operator's to fix.
	{Reason: computev1alpha.ReasonAwaitingAutoscaler},
	{Reason: computev1alpha.ReasonAutoscalerReady},
	{Reason: computev1alpha.ReasonAutoscalingSuspended},
	{Reason: computev1alpha.ReasonAutoscalersReady},
	{Reason: computev1alpha.ReasonWithinScalingLimits},
	{Reason: computev1alpha.ReasonMetricsUnavailable, Failing: true, Hint: metricsUnavailableHint},
	{Reason: computev1alpha.ReasonAutoscalerNotOwned, Failing: true, Hint: autoscalerNotOwnedHint},
	// An Instance's Programmed only: it runs (and may be Ready) but the
	// cell does not enforce its network policy. Never ranked with
	// availability, never the end of a wait; the operator's to fix.
	{Reason: computev1alpha.ReasonNetworkPolicyNotEnforced, Failing: true, Hint: policyNotEnforcedHint},
}

// rows indexes the registry by reason; blockingRank ranks the blocking
// rows, higher worse.
var rows, blockingRank = func() (map[string]Row, map[string]int) {
	byReason := make(map[string]Row, len(registry))
	ranks := map[string]int{}
	n := 0
	for _, r := range registry {
		if r.Blocking {
			n++
		}
	}
	for _, r := range registry {
		byReason[r.Reason] = r
		if r.Blocking {
			ranks[r.Reason] = n
			n--
		}
	}
	return byReason, ranks
}()

// Lookup returns the registry's row for reason; ok is false for a reason
// the registry does not know (a newer provider's, say): such a reason
// ranks with NotAvailable and is a wait.
func Lookup(reason string) (Row, bool) {
	r, ok := rows[reason]
	return r, ok
}

// Registry returns every row, in the registry's order.
func Registry() []Row { return slices.Clone(registry) }

// Failing reports whether reason is a failure someone must act on (quota
// denied, configuration rejected, image unavailable, crashing, an
// operator's fault) rather than something to wait for. Failures are worth
// a Warning event.
func Failing(reason string) bool { return rows[reason].Failing }

// Terminal reports whether reason is a failure waiting will not fix.
func Terminal(reason string) bool { return rows[reason].Terminal }

// HaltsRollout reports whether reason halts a rollout across cities.
func HaltsRollout(reason string) bool { return rows[reason].HaltsRollout }

// Severity returns how bad a blocking reason is: the higher, the worse.
// Reasons outside the blocking rows rank with NotAvailable.
func Severity(reason string) int {
	if s, ok := blockingRank[reason]; ok {
		return s
	}
	return blockingRank[computev1alpha.ReasonNotAvailable]
}

// BlockingReasons returns the blocking reasons, worst first.
func BlockingReasons() []string {
	var out []string
	for _, r := range registry {
		if r.Blocking {
			out = append(out, r.Reason)
		}
	}
	return out
}

// IsProgressing reports whether reason says what is under way.
func IsProgressing(reason string) bool { return rows[reason].Progress > 0 }

// CompareProgress orders progressing blockers most significant first: by
// their progress rank (reasons that rank none come last, with
// ReplicasNotReady), then by object name.
func CompareProgress(a, b Blocker) int {
	return cmp.Or(
		cmp.Compare(progressRank(b.Reason), progressRank(a.Reason)),
		cmp.Compare(a.Object, b.Object),
		cmp.Compare(a.Reason, b.Reason),
	)
}

// progressRank maps a reason to its progress rank, at least 1.
func progressRank(reason string) int { return max(rows[reason].Progress, 1) }

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

// DescribeWorst says which Instance reports the worst reason and how many
// share it: "instance web-0: <message>", or "3 instances report
// ImageUnavailable; instance web-0: <message>". The cell's Available
// condition and the Workload's city status word it the same way.
func DescribeWorst(worst Blocker, count int) string {
	if count > 1 {
		return fmt.Sprintf("%d instances report %s; instance %s: %s", count, worst.Reason, worst.Object, worst.Message)
	}
	return fmt.Sprintf("instance %s: %s", worst.Object, worst.Message)
}
