package status

import "fmt"

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

// NextSteps says what to do about reason (the registry's hint); nil when
// waiting is all there is to do.
func NextSteps(reason string, h Hints) []string {
	if hint := rows[reason].Hint; hint != nil {
		return hint(h)
	}
	return nil
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

func imageHint(h Hints) []string {
	return append([]string{
		"Check the image name and tag, and that the registry lets the platform pull it (private images need an image pull secret).",
		"Then deploy a fixed image: " + h.cmd("deploy %s --image <image>", h.Workload),
	}, h.undo()...)
}

func crashingHint(h Hints) []string {
	return append([]string{
		"The container starts and exits again: check its command, arguments and environment.",
		"See the instance's conditions and events: " + h.cmd("instances describe <instance>"),
	}, h.undo()...)
}

func configurationHint(h Hints) []string {
	return append([]string{
		"The platform rejected the instance configuration (see the message); fix the workload and deploy again.",
	}, h.undo()...)
}

func haltedHint(h Hints) []string {
	return append([]string{
		"A city failed at the new revision, so later waves kept the previous one (see the message).",
		"Fix the template and deploy again (the rollout restarts at wave 1): " + h.cmd("deploy %s --image <image>", h.Workload),
	}, h.undo()...)
}

func quotaExceededHint(h Hints) []string {
	cityFlag := ""
	if h.City != "" {
		cityFlag = " --city " + h.City
	}
	return []string{
		"The project is at its quota: see what is used with " + h.cmd("quota%s", cityFlag),
		"Scale down (" + h.cmd("scale %s --min <n>", h.Workload) + ") or ask for a higher quota.",
	}
}

func noBudgetHint(Hints) []string {
	return []string{"The project has no quota for this resource yet; ask your platform operator or Datum support for a quota grant."}
}

func validationHint(Hints) []string {
	return []string{"The quota system rejected the instance's claim; contact Datum support with the message above."}
}

func quotaBackendHint(Hints) []string {
	return []string{"Quota cannot be checked right now; this is on the platform side and clears by itself once fixed. If it persists, contact Datum support."}
}

func notBoundHint(h Hints) []string {
	return []string{
		"The city is not enabled for this project: deploy to enabled cities only (the message lists them), e.g. " +
			h.cmd("deploy %s --city <cities>", h.Workload),
	}
}

func locationNotReadyHint(Hints) []string {
	return []string{"The city's location is not accepting workloads right now; instances start there once it is."}
}

func unreachableHint(h Hints) []string {
	return []string{"compute has not heard from this city's cell: its figures are the last known. Nothing is deleted meanwhile; " +
		"the city catches up with your latest spec when it is reachable again. Other cities are not affected. " + h.failoverHint()}
}

func sourceNotFoundHint(h Hints) []string {
	return []string{"A ConfigMap or Secret the template references does not exist in the project (the message names it): create it, " +
		"and the instances start once it reaches the city; or deploy without the reference: " + h.cmd("deploy %s ...", h.Workload)}
}

func sourceUnauthorizedHint(Hints) []string {
	return []string{"The workload's author may not read a ConfigMap or Secret the template references (the message names it): " +
		"ask a project admin to grant read access, or reference an object you may read."}
}

func sourceTooLargeHint(Hints) []string {
	return []string{"A ConfigMap or Secret the template references is larger than a city accepts (the message says the limit): shrink or split it."}
}

func conflictHint(Hints) []string {
	return []string{"Another workload's deployment holds the name this city needs; delete the stale workload or rename this one."}
}

// failoverHint says what failover does for an unreachable city: what the
// Workload's failover does, or how to get one.
func (h Hints) failoverHint() string {
	if h.Failover {
		return "The placement's failover runs its replicas in a fallback after the toleration, and drains them once the city is back (the Failover line says when)."
	}
	return "To run its replicas elsewhere meanwhile, give the placement a failover (spec.placements[].failover, docs/faults.md)."
}

func metricsUnavailableHint(h Hints) []string {
	return []string{"This city's cell serves no resource metrics, so its replicas stay at minReplicas (never scaled on a guess). " +
		"Ask the platform's operator to run a metrics pipeline there (docs/install.md, Autoscaling), or scale the city by hand: " +
		h.cmd("scale %s --replicas N", h.Workload)}
}

func autoscalerNotOwnedHint(Hints) []string {
	return []string{"The city's cell holds an autoscaler of this deployment's name that compute did not create; compute leaves it alone " +
		"and nothing autoscales the city. Ask the platform's operator to remove it: compute then creates its own."}
}

func policyNotEnforcedHint(Hints) []string {
	return []string{"The instances run, but this city's cell does not enforce network policies, so their declared ingress restrictions do not hold. " +
		"Ask the platform's operator to run a CNI or policy agent that enforces NetworkPolicy there (docs/install.md, the Kubernetes runtime provider)."}
}

// admissionHint is the next step of a project plane without compute's
// admission webhooks.
func admissionHint(Hints) []string {
	return []string{"Compute's admission webhooks are not registered in this project's control plane; ask its operator to register them (config/webhook, docs/install.md). The workload's changes are federated once they are."}
}
