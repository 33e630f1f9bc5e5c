package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/status"
)

// observedCity is one placement × city as observed after the reconcile
// wrote the WorkloadDeployments.
type observedCity struct {
	placement.Target
	// Deployment is the WorkloadDeployment of the city, nil when there is
	// none (see Reason).
	Deployment *computev1alpha.WorkloadDeployment
}

// statusInput is everything the status is computed from.
type statusInput struct {
	workload *computev1alpha.Workload
	cities   []observedCity
	// revision is the current revision; nil when it could not be recorded.
	revision *revision.Current
	// settled is true when every write of the reconcile succeeded.
	settled bool
	// now stamps the transitions of conditions that change.
	now metav1.Time
}

// computeStatus returns the Workload status for in. It is pure and
// deterministic: the same observations give the same status, condition
// transition times aside (kept from the current status when the condition
// did not change).
func computeStatus(in statusInput) computev1alpha.WorkloadStatus {
	w := in.workload
	out := computev1alpha.WorkloadStatus{
		ObservedGeneration:  w.Status.ObservedGeneration,
		CurrentRevision:     w.Status.CurrentRevision,
		CurrentTemplateHash: w.Status.CurrentTemplateHash,
	}
	if in.revision != nil {
		out.CurrentRevision = in.revision.Number
		out.CurrentTemplateHash = in.revision.TemplateHash
	}

	byPlacement := map[string][]cityView{}
	all := make([]cityView, 0, len(in.cities))
	caughtUp := in.settled
	for _, c := range in.cities {
		v := viewOf(c)
		byPlacement[c.Placement] = append(byPlacement[c.Placement], v)
		v.label = c.Placement + "/" + c.CityCode
		all = append(all, v)
		if c.Deployment != nil {
			out.Deployments++
			addCounts(&out.ReplicaCounts, v.status.ReplicaCounts)
		}
		caughtUp = caughtUp && !v.progressingFor(computev1alpha.ReasonDeploymentPending)
	}

	names := make([]string, 0, len(w.Spec.Placements))
	for _, p := range w.Spec.Placements {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		ps := computev1alpha.WorkloadPlacementStatus{Name: name}
		for _, v := range byPlacement[name] {
			addCounts(&ps.ReplicaCounts, v.status.ReplicaCounts)
			ps.Cities = append(ps.Cities, v.status)
		}
		ps.Conditions = conditionsFor(previousPlacementConditions(w, name), byPlacement[name], w.Generation, in.now)
		out.Placements = append(out.Placements, ps)
	}
	out.Conditions = conditionsFor(w.Status.Conditions, all, w.Generation, in.now)

	if caughtUp {
		out.ObservedGeneration = w.Generation
	}
	return out
}

// cityView is a city's status with what the conditions need to know about
// it, and the label it is named by in messages: "DFW" within a placement,
// "edge/DFW" within the Workload.
type cityView struct {
	label  string
	status computev1alpha.WorkloadCityStatus
	// progressing is set while the city's deployment is pending or rolling
	// out; progressReason says which.
	progressing    bool
	progressReason string
}

// progressingFor reports whether the city is progressing for reason.
func (v cityView) progressingFor(reason string) bool {
	return v.progressing && v.progressReason == reason
}

// viewOf observes one city.
func viewOf(c observedCity) cityView {
	v := cityView{label: c.CityCode, status: cityStatus(c)}
	wd := c.Deployment
	switch {
	case wd == nil:
		// No deployment: pending when one is coming (being created, or
		// waiting for the old one to go); otherwise Reason says why not.
		if c.Reason == "" || c.Reason == computev1alpha.ReasonDeploymentPending {
			v.progressing, v.progressReason = true, computev1alpha.ReasonDeploymentPending
		}
	case !deploymentCaughtUp(c):
		v.progressing, v.progressReason = true, computev1alpha.ReasonDeploymentPending
	default:
		if p := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionProgressing); p != nil && p.Status == metav1.ConditionTrue {
			v.progressing, v.progressReason = true, p.Reason
		}
	}
	return v
}

// deploymentCaughtUp reports whether the deployment of c carries the
// Workload's current spec and its cell has reported status for it.
func deploymentCaughtUp(c observedCity) bool {
	wd := c.Deployment
	if wd.DeletionTimestamp != nil || wd.Status.ObservedGeneration < wd.Generation {
		return false
	}
	if c.Desired == nil {
		// Kept for a city that is not ready, or a conflict: nothing to wait for.
		return true
	}
	_, changed := placement.Merge(wd, c.Desired)
	return !changed
}

// cityStatus reports one city.
func cityStatus(c observedCity) computev1alpha.WorkloadCityStatus {
	cs := computev1alpha.WorkloadCityStatus{CityCode: c.CityCode}
	wd := c.Deployment
	if wd != nil {
		cs.DeploymentName = wd.Name
		cs.ReplicaCounts = wd.Status.ReplicaCounts
		cs.Available = meta.IsStatusConditionTrue(wd.Status.Conditions, computev1alpha.ConditionAvailable)
		// A city whose cell is not heard from keeps its last known counts
		// but claims nothing: its conditions are Unknown.
		if seen := wd.Status.LastSeenTime; seen != nil {
			cs.Stale, cs.LastSeenTime = true, seen.DeepCopy()
		}
	}
	cs.Reason, cs.Message = cityReason(c)
	cs.Message = status.Truncate(cs.Message)
	return cs
}

// cityReason explains the state of a city: why it has no deployment, else
// what its deployment is waiting for or doing.
func cityReason(c observedCity) (reason, message string) {
	if c.Reason != "" {
		return c.Reason, c.Message
	}
	wd := c.Deployment
	if wd == nil {
		return computev1alpha.ReasonDeploymentPending, fmt.Sprintf("WorkloadDeployment %s is being created", c.Name)
	}
	avail := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAvailable)
	if wd.Status.LastSeenTime != nil && avail != nil {
		// Nothing else about the city can be trusted until it is heard from.
		return avail.Reason, avail.Message
	}
	if wd.Status.ObservedGeneration < wd.Generation {
		return computev1alpha.ReasonDeploymentPending,
			fmt.Sprintf("waiting for the %s cell to report generation %d of WorkloadDeployment %s", c.CityCode, wd.Generation, wd.Name)
	}
	if avail != nil && avail.Status != metav1.ConditionTrue {
		return avail.Reason, avail.Message
	}
	if p := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionProgressing); p != nil && p.Status == metav1.ConditionTrue {
		return p.Reason, p.Message
	}
	if avail != nil {
		return avail.Reason, avail.Message
	}
	return computev1alpha.ReasonDeploymentPending,
		fmt.Sprintf("the %s cell has not reported the availability of WorkloadDeployment %s yet", c.CityCode, wd.Name)
}

// conditionsFor computes Available and Progressing over cities, one setter
// per condition, keeping the transition times of previous conditions that
// did not change.
func conditionsFor(previous []metav1.Condition, cities []cityView, generation int64, now metav1.Time) []metav1.Condition {
	conds := make([]metav1.Condition, 0, 2)
	for _, c := range previous {
		if c.Type == computev1alpha.ConditionAvailable || c.Type == computev1alpha.ConditionProgressing {
			conds = append(conds, *c.DeepCopy())
		}
	}
	for _, c := range []metav1.Condition{availableCondition(cities), progressingCondition(cities)} {
		c.ObservedGeneration = generation
		c.Message = status.Truncate(c.Message)
		status.SetCondition(&conds, c, now)
	}
	slices.SortFunc(conds, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return conds
}

// availableCondition is True when a replica is ready in any city; Unknown
// (CellUnreachable) when none is but a city nobody has heard from might
// serve; otherwise False with the worst blocking reason of the cities
// (internal/status ranks the management plane's reasons with the cells').
func availableCondition(cities []cityView) metav1.Condition {
	var ready, desired int32
	var up []string
	down := make([]status.Blocker, 0, len(cities))
	for _, c := range cities {
		ready += c.status.ReadyReplicas
		desired += c.status.DesiredReplicas
		if c.status.Available {
			up = append(up, c.label)
			continue
		}
		down = append(down, status.Blocker{Object: c.label, Reason: c.status.Reason, Message: c.status.Message})
	}
	slices.SortFunc(down, status.Compare)
	if len(up) > 0 {
		msg := fmt.Sprintf("%d of %d desired replicas ready; available in %s", ready, desired, strings.Join(up, ", "))
		if len(down) > 0 {
			msg += "; not available in " + describeBlockers(down)
		}
		return metav1.Condition{
			Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason: computev1alpha.ReasonReplicasAvailable, Message: msg,
		}
	}
	if len(down) == 0 {
		return metav1.Condition{
			Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionFalse,
			Reason: computev1alpha.ReasonNoDeployments, Message: "the Workload has no cities",
		}
	}
	worst := down[0]
	msg := worst.Object + ": " + worst.Message
	if len(down) > 1 {
		msg += "; also not available: " + describeBlockers(down[1:])
	}
	st := metav1.ConditionFalse
	if slices.ContainsFunc(cities, func(c cityView) bool { return c.status.Stale }) {
		// No reachable city serves, and one nobody has heard from may:
		// compute does not know.
		st = metav1.ConditionUnknown
		if worst.Reason != computev1alpha.ReasonCellUnreachable {
			msg = "cities unreachable, others not available: " + describeBlockers(down)
		}
		worst.Reason = computev1alpha.ReasonCellUnreachable
	}
	return metav1.Condition{
		Type: computev1alpha.ConditionAvailable, Status: st,
		Reason: worst.Reason, Message: msg,
	}
}

// progressingCondition is True while any city's deployment is pending,
// rolling out, scaling, or has replicas not yet running its template (held
// by quota, say); the most significant city's reason is reported.
func progressingCondition(cities []cityView) metav1.Condition {
	var moving []status.Blocker
	for _, c := range cities {
		if c.progressing {
			moving = append(moving, status.Blocker{Object: c.label, Reason: c.progressReason})
		}
	}
	if len(moving) == 0 {
		return metav1.Condition{
			Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: computev1alpha.ReasonRolloutComplete, Message: "every deployment is up to date",
		}
	}
	slices.SortFunc(moving, status.CompareProgress)
	reason := moving[0].Reason
	if !slices.Contains(status.ProgressingReasons(), reason) {
		reason = computev1alpha.ReasonReplicasNotReady
	}
	return metav1.Condition{
		Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: reason, Message: "progressing in " + describeBlockers(moving),
	}
}

// describeBlockers lists blockers as "DFW (PendingQuota), LHR (...)".
func describeBlockers(bs []status.Blocker) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s (%s)", b.Object, b.Reason))
	}
	return strings.Join(parts, ", ")
}

// previousPlacementConditions returns the conditions the status reports for
// the placement named name.
func previousPlacementConditions(w *computev1alpha.Workload, name string) []metav1.Condition {
	for _, p := range w.Status.Placements {
		if p.Name == name {
			return p.Conditions
		}
	}
	return nil
}

// addCounts adds c to sum.
func addCounts(sum *computev1alpha.ReplicaCounts, c computev1alpha.ReplicaCounts) {
	sum.Replicas += c.Replicas
	sum.CurrentReplicas += c.CurrentReplicas
	sum.UpdatedReplicas += c.UpdatedReplicas
	sum.ReadyReplicas += c.ReadyReplicas
	sum.DesiredReplicas += c.DesiredReplicas
}
