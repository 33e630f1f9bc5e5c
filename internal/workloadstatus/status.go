package workloadstatus

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/status"
)

// City is one placement × city as observed after the reconcile wrote the
// WorkloadDeployments.
type City struct {
	placement.Target
	// Deployment is the WorkloadDeployment of the city, nil when there is
	// none (see Reason).
	Deployment *computev1alpha.WorkloadDeployment
	// Unsynced is set when a write the reconcile planned for the
	// deployment did not land: it does not carry the Workload's spec yet.
	Unsynced bool
}

// Input is everything the status is computed from.
type Input struct {
	Workload *computev1alpha.Workload
	// Cities are the Workload's placements × cities.
	Cities []City
	// Leaving are deployments of the Workload for cities no longer in its
	// placements, being deleted.
	Leaving []*computev1alpha.WorkloadDeployment
	// Revision is the current revision; nil when it could not be recorded.
	Revision *revision.Current
	// Rollout is the rollout across cities, as planned by this reconcile.
	Rollout *computev1alpha.WorkloadRolloutStatus
	// Settled is true when every write of the reconcile succeeded.
	Settled bool
	// Now stamps the transitions of conditions that change.
	Now metav1.Time
	// InstanceType is the InstanceType the template names, nil when the
	// catalog has none of that name: a Deprecated or Disabled one sets the
	// InstanceTypeDeprecated or InstanceTypeDisabled condition, naming the
	// replacement.
	InstanceType *computev1alpha.InstanceType
	// Failover are the failover decisions by target key
	// (failover.Outcome.ByTarget): each city's failover, and the FailedOver
	// condition of a Workload with a placement that has failover.
	Failover map[string]*failover.Decision
}

// Compute returns the Workload status for in.
func Compute(in Input) computev1alpha.WorkloadStatus {
	w := in.Workload
	out := computev1alpha.WorkloadStatus{
		ObservedGeneration:  w.Status.ObservedGeneration,
		CurrentRevision:     w.Status.CurrentRevision,
		CurrentTemplateHash: w.Status.CurrentTemplateHash,
		Rollout:             in.Rollout,
	}
	if in.Revision != nil {
		out.CurrentRevision = in.Revision.Number
		out.CurrentTemplateHash = in.Revision.TemplateHash
	}
	byPlacement := map[string][]cityView{}
	all := make([]cityView, 0, len(in.Cities))
	caughtUp := in.Settled
	for _, v := range observeCities(in) {
		byPlacement[v.placement] = append(byPlacement[v.placement], v)
		all = append(all, v)
		if v.status.DeploymentName != "" {
			out.Deployments++
		}
		addCounts(&out.ReplicaCounts, v.status.ReplicaCounts)
		caughtUp = caughtUp && !v.progressingFor(computev1alpha.ReasonDeploymentPending)
	}
	leaving := map[string][]computev1alpha.WorkloadCityStatus{}
	for _, wd := range in.Leaving {
		leaving[wd.Spec.PlacementName] = append(leaving[wd.Spec.PlacementName], leavingStatus(wd))
	}

	placements := make([]string, 0, len(w.Spec.Placements)+len(leaving))
	inSpec := map[string]bool{}
	for _, p := range w.Spec.Placements {
		placements = append(placements, p.Name)
		inSpec[p.Name] = true
	}
	for name := range leaving {
		placements = append(placements, name)
	}
	slices.Sort(placements)
	var scalers []scaler
	for _, name := range slices.Compact(placements) {
		ps, sc := placementStatus(w, name, byPlacement[name], leaving[name], inSpec[name], in.Now)
		if sc != nil {
			scalers = append(scalers, *sc)
		}
		out.Placements = append(out.Placements, ps)
	}
	out.Conditions = conditionsFor(w.Status.Conditions, all, in.Rollout, w, in.Now)
	out.Conditions = setAutoscaling(out.Conditions, w.Status.Conditions, workloadScaler(scalers), w.Generation, in.Now)
	out.Conditions = instanceTypeConditions(out.Conditions, w, in.InstanceType, in.Now)
	cityStatuses := make([]computev1alpha.WorkloadCityStatus, 0, len(all))
	for _, v := range all {
		cityStatuses = append(cityStatuses, v.status)
	}
	out.Conditions = failoverCondition(out.Conditions, w, cityStatuses, in.Now)
	for _, l := range leaving {
		cityStatuses = append(cityStatuses, l...)
	}
	out.Health = health(cityStatuses, caughtUp)

	if caughtUp {
		out.ObservedGeneration = w.Generation
	}
	return out
}

// placementStatus is the status of the placement named name: its cities
// (those of the spec, then those leaving), their counts, and, for a
// placement of the spec, its conditions. The scaler is the placement's
// autoscaling, nil when it does not autoscale.
func placementStatus(w *computev1alpha.Workload, name string, cities []cityView, leaving []computev1alpha.WorkloadCityStatus,
	inSpec bool, now metav1.Time) (computev1alpha.WorkloadPlacementStatus, *scaler) {
	ps := computev1alpha.WorkloadPlacementStatus{Name: name}
	for _, v := range cities {
		addCounts(&ps.ReplicaCounts, v.status.ReplicaCounts)
		ps.Cities = append(ps.Cities, v.status)
	}
	ps.Cities = append(ps.Cities, leaving...)
	slices.SortStableFunc(ps.Cities, func(a, b computev1alpha.WorkloadCityStatus) int {
		return cmp.Or(cmp.Compare(a.CityCode, b.CityCode), cmp.Compare(a.Location.NameOrEmpty(), b.Location.NameOrEmpty()))
	})
	if !inSpec {
		return ps, nil
	}
	previous := previousPlacementConditions(w, name)
	sc := placementScaler(placementOf(w, name), cities)
	ps.Conditions = conditionsFor(previous, cities, nil, w, now)
	ps.Conditions = setAutoscaling(ps.Conditions, previous, sc, w.Generation, now)
	return ps, sc
}

// placementOf is w's placement named name, nil when there is none.
func placementOf(w *computev1alpha.Workload, name string) *computev1alpha.WorkloadPlacement {
	for i := range w.Spec.Placements {
		if w.Spec.Placements[i].Name == name {
			return &w.Spec.Placements[i]
		}
	}
	return nil
}

// Unknown returns w's status with its Available and Progressing conditions
// Unknown for reason (ObservationFailed): an input they depend on could not
// be read, so what they said may no longer hold. Everything else stands.
func Unknown(w *computev1alpha.Workload, reason, message string, now metav1.Time) computev1alpha.WorkloadStatus {
	out := *w.Status.DeepCopy()
	for _, t := range []string{computev1alpha.ConditionAvailable, computev1alpha.ConditionProgressing} {
		status.SetCondition(&out.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason,
			Message: status.Truncate(message), ObservedGeneration: w.Generation}, now)
	}
	slices.SortFunc(out.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// observeCities observes every city of in, with its failover, its place
// in the rollout and the state decided from them.
func observeCities(in Input) []cityView {
	w := in.Workload
	rollout := rolloutByCity(in.Rollout)
	suspend := computev1alpha.IsSuspended(w.Annotations)
	out := make([]cityView, 0, len(in.Cities))
	for _, c := range in.Cities {
		v := viewOf(c)
		if v.status.DesiredReplicas == 0 && c.Bound && (c.Deployment == nil || c.Deployment.Status.ObservedGeneration == 0) {
			// The cell has not said yet: what the spec asks for.
			v.status.DesiredReplicas = specReplicas(w, c)
		}
		failoverOf(&v.status, c, in.Failover)
		if rc, ok := rollout[c.Key()]; ok && c.Deployment != nil {
			v.status.Wave, v.status.Revision, v.status.Rollout = rc.Wave, rc.Revision, rc.State
		}
		decideCity(&v.status, suspend)
		v.label, v.placement = c.Label(), c.Placement
		if p := placementOf(w, c.Placement); p != nil && p.ScaleSettings.Autoscales() {
			v.scaler = cityScaler(strings.TrimPrefix(v.label, c.Placement+"/"), c.Deployment, p.ScaleSettings)
		}
		out = append(out, v)
	}
	return out
}

// specReplicas is the replicas c's placement asks of its city: the
// deployment's spec.replicas when set, else the placement's minReplicas.
func specReplicas(w *computev1alpha.Workload, c City) int32 {
	if c.Deployment != nil && c.Deployment.Spec.Replicas != nil {
		return *c.Deployment.Spec.Replicas
	}
	if p := placementOf(w, c.Placement); p != nil {
		return p.ScaleSettings.MinReplicas
	}
	return 0
}

// rolloutByCity indexes the cities of r by placement.KeyOf.
func rolloutByCity(r *computev1alpha.WorkloadRolloutStatus) map[string]computev1alpha.CityRolloutStatus {
	out := map[string]computev1alpha.CityRolloutStatus{}
	if r != nil {
		for _, c := range r.Cities {
			out[placement.KeyOf(c.Placement, c.CityCode, c.Location)] = c
		}
	}
	return out
}

// leavingStatus reports a city no longer in the placements whose deployment
// is being removed.
func leavingStatus(wd *computev1alpha.WorkloadDeployment) computev1alpha.WorkloadCityStatus {
	return computev1alpha.WorkloadCityStatus{
		CityCode: wd.Spec.CityCode, Location: wd.Spec.LocationRef.DeepCopy(), DeploymentName: wd.Name, ReplicaCounts: wd.Status.ReplicaCounts,
		State: computev1alpha.CityStateRemoving, Reason: computev1alpha.ReasonDeploymentRemoving,
		Message: fmt.Sprintf("WorkloadDeployment %s is being removed with its %d instances", wd.Name, wd.Status.Replicas),
	}
}

// cityView is a city's status with what the conditions need to know about
// it, and the label it is named by in messages: "DFW" within a placement,
// "edge/DFW" within the Workload.
type cityView struct {
	label     string
	placement string
	status    computev1alpha.WorkloadCityStatus
	// progressing is set while the city's deployment is pending or rolling
	// out; progressReason says which.
	progressing    bool
	progressReason string
	// scaler is the city's autoscaling, nil when its placement does not
	// autoscale or it has no deployment.
	scaler *scaler
}

// progressingFor reports whether the city is progressing for reason.
func (v cityView) progressingFor(reason string) bool {
	return v.progressing && v.progressReason == reason
}

// viewOf observes one city.
func viewOf(c City) cityView {
	v := cityView{label: strings.TrimPrefix(c.Label(), c.Placement+"/"), status: cityStatus(c)}
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
func deploymentCaughtUp(c City) bool {
	wd := c.Deployment
	if wd.DeletionTimestamp != nil || wd.Status.ObservedGeneration < wd.Generation {
		return false
	}
	if c.Desired == nil {
		// Kept for a city that is not ready, or a conflict: nothing to wait for.
		return true
	}
	return !c.Unsynced
}

// cityStatus reports one city.
func cityStatus(c City) computev1alpha.WorkloadCityStatus {
	cs := computev1alpha.WorkloadCityStatus{CityCode: c.CityCode}
	if c.Location != nil && c.Location.Namespace != "" {
		// A Location name that is not bound has no namespace: its
		// message names it.
		cs.Location = c.Location.DeepCopy()
	}
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
		// Suspended only as the cell confirmed it (every Instance
		// stopped), and only while the cell is heard from.
		cs.Suspended = wd.Status.Suspended && !cs.Stale
		// The cell's hash in the current spelling (a cell of a release
		// before SHA-256 writes the earlier one), or the template's own
		// while the cell has not caught up.
		cs.TemplateHash = names.HashesOf(&wd.Spec.Template).Normalize(wd.Status.TemplateHash)
		if cs.TemplateHash == "" || wd.Status.ObservedGeneration < wd.Generation {
			cs.TemplateHash = names.TemplateHash(&wd.Spec.Template)
		}
		cs.RestartedAt = wd.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
		if wd.Spec.ScaleSettings.Autoscales() {
			// What the city's autoscaler last reported, while it autoscales.
			cs.Autoscaling = wd.Status.Autoscaling.DeepCopy()
		}
	}
	cs.Reason, cs.Message = cityReason(c)
	if wd != nil && c.Reason == "" && !cs.Stale && wd.Status.ObservedGeneration >= wd.Generation {
		// The cell's verdict on the current generation, and the worst of
		// its Instances of the current template: the reason the city shows.
		cs.ReplicasReady = meta.IsStatusConditionTrue(wd.Status.Conditions, computev1alpha.ConditionReplicasReady)
		if nr := wd.Status.NotReady; nr != nil && !cs.ReplicasReady {
			cs.NotReady = nr.DeepCopy()
			cs.Reason, cs.Message = nr.Reason, notReadyMessage(nr)
		}
	}
	cs.Message = status.Truncate(cs.Message)
	return cs
}

// cityReason explains the state of a city: why it has no deployment, else
// what its deployment is waiting for or doing.
func cityReason(c City) (reason, message string) {
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
// did not change. rollout, for the Workload's own conditions, is the
// rollout across cities: with spec.rollout set it decides Progressing while
// it halts, waits or soaks.
func conditionsFor(previous []metav1.Condition, cities []cityView, rollout *computev1alpha.WorkloadRolloutStatus,
	w *computev1alpha.Workload, now metav1.Time) []metav1.Condition {
	conds := make([]metav1.Condition, 0, 2)
	for _, c := range previous {
		if c.Type == computev1alpha.ConditionAvailable || c.Type == computev1alpha.ConditionProgressing {
			conds = append(conds, *c.DeepCopy())
		}
	}
	progressing := progressingCondition(cities)
	if w.Spec.Rollout != nil && rollout != nil {
		progressing = rolloutProgressing(progressing, rollout)
	}
	progressing = failedProgressing(progressing, cities)
	for _, c := range []metav1.Condition{availableCondition(cities), progressing} {
		c.ObservedGeneration = w.Generation
		c.Message = status.Truncate(c.Message)
		status.SetCondition(&conds, c, now)
	}
	slices.SortFunc(conds, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return conds
}

// rolloutProgressing is the Workload's Progressing condition under a
// rollout across cities: False while it is halted, Unknown while it is
// paused or waits for approval, True while a wave progresses (the cities'
// own progress when they report one); otherwise the cities' condition.
func rolloutProgressing(cities metav1.Condition, r *computev1alpha.WorkloadRolloutStatus) metav1.Condition {
	cond := metav1.Condition{Type: computev1alpha.ConditionProgressing, Message: r.Message}
	switch r.Phase {
	case computev1alpha.RolloutPhaseHalted:
		cond.Status, cond.Reason = metav1.ConditionFalse, computev1alpha.ReasonRolloutHalted
	case computev1alpha.RolloutPhasePaused:
		cond.Status, cond.Reason = metav1.ConditionUnknown, computev1alpha.ReasonRolloutPaused
	case computev1alpha.RolloutPhaseAwaitingApproval:
		cond.Status, cond.Reason = metav1.ConditionUnknown, computev1alpha.ReasonRolloutAwaitingApproval
	case computev1alpha.RolloutPhaseProgressing:
		if cities.Status == metav1.ConditionTrue {
			return cities // the deployments' own progress says more
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, computev1alpha.ReasonWaveProgressing
	default:
		return cities
	}
	return cond
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
	if !status.IsProgressing(reason) {
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

// instanceTypeConditions sets InstanceTypeDeprecated or InstanceTypeDisabled
// (type and reason the same, the message naming the replacement) when it is
// not Active, and removes both otherwise. Earlier transitions are kept from
// w's status.
func instanceTypeConditions(conds []metav1.Condition, w *computev1alpha.Workload, it *computev1alpha.InstanceType, now metav1.Time) []metav1.Condition {
	want := ""
	var message string
	if it != nil {
		rep := it.Spec.Lifecycle.ReplacementInstanceType
		switch it.Spec.Lifecycle.Phase {
		case computev1alpha.InstanceTypePhaseDeprecated:
			want, message = computev1alpha.InstanceTypeConditionDeprecated, catalog.DeprecatedMessage(it.Name, rep)
		case computev1alpha.InstanceTypePhaseDisabled:
			want, message = computev1alpha.InstanceTypeConditionDisabled, catalog.DisabledMessage(it.Name, rep)
		}
	}
	out := slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool {
		return c.Type == computev1alpha.InstanceTypeConditionDeprecated || c.Type == computev1alpha.InstanceTypeConditionDisabled
	})
	if want == "" {
		return out
	}
	if prev := meta.FindStatusCondition(w.Status.Conditions, want); prev != nil {
		out = append(out, *prev)
	}
	status.SetCondition(&out, metav1.Condition{Type: want, Status: metav1.ConditionTrue, Reason: want,
		Message: status.Truncate(message), ObservedGeneration: w.Generation}, now)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}
