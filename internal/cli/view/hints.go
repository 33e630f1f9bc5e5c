package view

import (
	"fmt"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Hints is what next steps may refer to.
type Hints struct {
	// Cmd renders a command line the user can copy, e.g.
	// Cmd("status %s", "web") is "datumctl compute status web".
	Cmd func(format string, args ...any) string
	// Workload is the workload the reason was seen on.
	Workload string
	// City is the city it was seen in; may be empty.
	City string
	// CanUndo is set when the workload has an earlier revision to roll
	// back to.
	CanUndo bool
	// Failover is set when a placement of the workload has a failover.
	Failover bool
}

// cmd renders a command line, or the bare command without a renderer.
func (h Hints) cmd(format string, args ...any) string {
	if h.Cmd == nil {
		return "datumctl compute " + fmt.Sprintf(format, args...)
	}
	return h.Cmd(format, args...)
}

// undo is the roll-back step, when there is something to roll back to.
func (h Hints) undo() []string {
	if !h.CanUndo {
		return nil
	}
	return []string{"Or roll back to the previous revision: " + h.cmd("rollout undo %s", h.Workload)}
}

// NextSteps says what to do about a blocking reason; nil when waiting is
// all there is to do.
func NextSteps(reason string, h Hints) []string {
	cityFlag := ""
	if h.City != "" {
		cityFlag = " --city " + h.City
	}
	switch reason {
	case computev1alpha.ReasonImageUnavailable:
		return append([]string{
			"Check the image name and tag, and that the registry lets the platform pull it (private images need an image pull secret).",
			"Then deploy a fixed image: " + h.cmd("deploy %s --image <image>", h.Workload),
		}, h.undo()...)
	case computev1alpha.ReasonInstanceCrashing:
		return append([]string{
			"The container starts and exits again: check its command, arguments and environment.",
			"See the instance's conditions and events: " + h.cmd("instances describe <instance>"),
		}, h.undo()...)
	case computev1alpha.ReasonConfigurationError:
		return append([]string{
			"The platform rejected the instance configuration (see the message); fix the workload and deploy again.",
		}, h.undo()...)
	case computev1alpha.ReasonRolloutHalted:
		return append([]string{
			"A city failed at the new revision, so later waves kept the previous one (see the message).",
			"Fix the template and deploy again (the rollout restarts at wave 1): " + h.cmd("deploy %s --image <image>", h.Workload),
		}, h.undo()...)
	case computev1alpha.ReasonQuotaExceeded:
		return []string{
			"The project is at its quota: see what is used with " + h.cmd("quota%s", cityFlag),
			"Scale down (" + h.cmd("scale %s --min <n>", h.Workload) + ") or ask for a higher quota.",
		}
	case computev1alpha.ReasonQuotaNoBudget:
		return []string{"The project has no quota for this resource yet; ask your platform operator or Datum support for a quota grant."}
	case computev1alpha.ReasonValidationFailed:
		return []string{"The quota system rejected the instance's claim; contact Datum support with the message above."}
	case computev1alpha.ReasonQuotaBackendUnavailable, computev1alpha.ReasonQuotaMisconfigured,
		computev1alpha.ReasonQuotaProjectNotFound, computev1alpha.ReasonQuotaNamespaceNotFound,
		computev1alpha.ReasonQuotaProjectIDUnresolvable:
		return []string{"Quota cannot be checked right now; this is on the platform side and clears by itself once fixed. If it persists, contact Datum support."}
	case computev1alpha.ReasonLocationNotBound:
		return []string{
			"The city is not enabled for this project: deploy to enabled cities only (the message lists them), e.g. " +
				h.cmd("deploy %s --city <cities>", h.Workload),
		}
	case computev1alpha.ReasonLocationNotReady:
		return []string{"The city's location is not accepting workloads right now; instances start there once it is."}
	case computev1alpha.ReasonCellUnreachable:
		return []string{"compute has not heard from this city's cell: its figures are the last known. Nothing is deleted meanwhile; " +
			"the city catches up with your latest spec when it is reachable again. Other cities are not affected. " + h.failoverHint()}
	case computev1alpha.ReasonDeploymentConflict:
		return []string{"Another workload's deployment holds the name this city needs; delete the stale workload or rename this one."}
	}
	return nil
}

// failoverHint says what failover does for an unreachable city: what the
// Workload's failover does, or how to get one.
func (h Hints) failoverHint() string {
	if h.Failover {
		return "The placement's failover runs its replicas in a fallback after the toleration, and drains them once the city is back (the Failover line says when)."
	}
	return "To run its replicas elsewhere meanwhile, give the placement a failover (spec.placements[].failover, docs/faults.md)."
}
