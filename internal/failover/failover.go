// Package failover plans the city failover of a Workload's placements
// (spec.placements[].failover): which Locations' replicas run in a fallback
// because their cell has been unreachable past the toleration, where, and
// when they return. It is pure: the Workload controller reads the world,
// calls Make, and adds the fallbacks' targets to the placement's own.
//
// The rules (docs/faults.md "City failover"):
//
//   - A Location fails over when its deployment has been reported
//     unreachable (Available Unknown, reason CellUnreachable) for the
//     placement's toleration without a break: a cell heard from again
//     restarts the count, so a flapping city never fails over.
//   - Its replicas then run in the first fallback that is bound, ready, in
//     a reachable city and not one of the placement's own Locations (unless
//     the placement allows it), as a WorkloadDeployment of their own
//     labelled with the deployment they stand in for. The unreachable
//     deployment is never deleted or scaled.
//   - A fallback whose replicas are refused (quota, the network, its
//     Location no longer ready, its own cell unreachable past the
//     toleration) hands them to the next fallback in the list; the last one
//     is kept and retried.
//   - A Workload fails over at most its placement's maxFailedOverLocations
//     Locations at once; the controller adds the platform's rate limit.
//   - The fallback drains once the Location is reachable again and
//     Available at its current template, with every desired replica ready
//     and updated, for returnAfterSeconds without a break.
//
// So at no moment do fewer than the desired replicas run among reachable
// cities once a fallback is up (it drains only after the Location is back
// in full), and never more than desired plus the failed-over Locations'
// replicas.
package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
)

// PendingPoll is how soon a Location past its toleration with no fallback
// to take its replicas is looked at again: the reachability of cities the
// Workload does not run in is not watched.
const PendingPoll = 15 * time.Second

// Spec is a placement's failover with its defaults applied.
type Spec struct {
	// Fallbacks are Location names, in order.
	Fallbacks               []string
	Toleration, ReturnAfter time.Duration
	MaxLocations            int
	AllowPlacementLocations bool
}

// SpecOf returns p's failover, nil when it has none.
func SpecOf(p *computev1alpha.WorkloadPlacement) *Spec {
	f := p.Failover
	if f == nil {
		return nil
	}
	s := &Spec{
		Toleration:              seconds(f.TolerationSeconds, computev1alpha.DefaultFailoverTolerationSeconds),
		ReturnAfter:             seconds(f.ReturnAfterSeconds, computev1alpha.DefaultFailoverReturnAfterSeconds),
		MaxLocations:            int(computev1alpha.DefaultFailoverMaxFailedOverLocations),
		AllowPlacementLocations: f.AllowPlacementLocations,
	}
	if f.MaxFailedOverLocations != nil {
		s.MaxLocations = int(*f.MaxFailedOverLocations)
	}
	for _, l := range f.Fallbacks {
		s.Fallbacks = append(s.Fallbacks, l.Name)
	}
	return s
}

func seconds(v *int32, def int32) time.Duration {
	if v != nil {
		def = *v
	}
	return time.Duration(def) * time.Second
}

// Input is what a plan is made from.
type Input struct {
	Workload *computev1alpha.Workload
	// Targets are the Workload's targets, named (placement.Targets).
	Targets []placement.Target
	// Deployments are the namespace's WorkloadDeployments that can matter
	// to the Workload (its own among them).
	Deployments []computev1alpha.WorkloadDeployment
	// Cities are the cities bound to the Workload's namespace.
	Cities locations.Cities
	// Reachable says whether a city's cells are heard from; nil: all are.
	Reachable func(city string) bool
	Now       time.Time
}

// Decision is the failover of one target of a placement with failover.
type Decision struct {
	// Target is the placement's target; Deployment its deployment.
	Target     placement.Target
	Deployment *computev1alpha.WorkloadDeployment
	// Status is the target's failover status.
	Status computev1alpha.CityFailoverStatus
	// Fallback is the target that runs its replicas (Desired filled by
	// placement.Expand); nil when none does.
	Fallback *placement.Target
	// Existing is the fallback's deployment, nil when Fallback is new.
	Existing *computev1alpha.WorkloadDeployment
	// Start is set when Fallback is a move: the first failover of the
	// target, or a move from Previous, a fallback that refused.
	Start    bool
	Previous *placement.Target
	// Drain is the fallback deployment that drains in this pass: the
	// target has been back in full for the hold-down.
	Drain *computev1alpha.WorkloadDeployment
	// MovedFrom says which earlier fallback refused the replicas and why
	// (FailoverMovedFromAnnotation); empty when none did.
	MovedFrom string
	// ReturningSince is the value of FailoverReturningSinceAnnotation the
	// fallback's deployment carries: when the target was first seen back,
	// empty while it is not.
	ReturningSince string
}

// Outcome is the failover of a Workload.
type Outcome struct {
	// Decisions are per target of a placement with failover, in the order
	// of the placements and targets: only targets that are, or were,
	// unreachable.
	Decisions []Decision
	// RequeueAfter is when a toleration or hold-down ends; zero when
	// nothing waits.
	RequeueAfter time.Duration
}

// Starts counts the decisions that move replicas.
func (p Outcome) Starts() int {
	n := 0
	for i := range p.Decisions {
		if p.Decisions[i].Start {
			n++
		}
	}
	return n
}

// Hold keeps every move of p waiting (the platform's failover rate): a
// first failover becomes Pending with why, a move keeps the fallback it
// would leave. retry is when the rate allows the next move.
func (p *Outcome) Hold(why string, retry time.Duration) {
	for i := range p.Decisions {
		d := &p.Decisions[i]
		if !d.Start {
			continue
		}
		d.Start = false
		if d.Previous != nil {
			d.Fallback, d.Previous = d.Previous, nil
			d.Status.Message += "; " + why
			continue
		}
		d.Fallback = nil
		d.Status.Phase = computev1alpha.FailoverPending
		d.Status.CityCode, d.Status.Location, d.Status.DeploymentName, d.Status.Replicas = "", nil, "", 0
		d.Status.Message = fmt.Sprintf("%s unreachable since %s, past its toleration; %s",
			d.Target.Label(), clock(d.Status.UnreachableSince), why)
	}
	p.requeue(retry)
}

// Fallbacks returns the targets of the fallbacks the plan keeps or makes.
func (p Outcome) Fallbacks() []placement.Target {
	var out []placement.Target
	for i := range p.Decisions {
		if fb := p.Decisions[i].Fallback; fb != nil {
			out = append(out, *fb)
		}
	}
	return out
}

// ByTarget returns the decisions by their target's key.
func (p Outcome) ByTarget() map[string]*Decision {
	out := make(map[string]*Decision, len(p.Decisions))
	for i := range p.Decisions {
		out[p.Decisions[i].Target.Key()] = &p.Decisions[i]
	}
	return out
}

func (p *Outcome) requeue(after time.Duration) {
	if after <= 0 {
		after = time.Second
	}
	if p.RequeueAfter == 0 || after < p.RequeueAfter {
		p.RequeueAfter = after
	}
}

// Make plans the failover of in.Workload.
func Make(in Input) Outcome {
	w := in.Workload
	var plan Outcome
	if !slices.ContainsFunc(w.Spec.Placements, func(p computev1alpha.WorkloadPlacement) bool { return p.Failover != nil }) {
		// Nothing to plan, on the path of every Workload's reconcile: a
		// fallback left from a failover since removed is not a target, so
		// Diff drains it.
		return plan
	}
	own, fallbacks := deploymentsOf(in)
	// A Workload fails over at most maxFailedOverLocations at once: the
	// targets whose fallback stays count first.
	active := 0
	for name := range fallbacks {
		if own[name] != nil {
			active++
		}
	}
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		spec := SpecOf(p)
		if spec == nil {
			continue
		}
		pl := planner{in: in, spec: spec, placement: p.Name, own: ownLocations(in.Targets, p.Name), plan: &plan}
		pl.decideAll(own, fallbacks, &active)
	}
	return plan
}

// deploymentsOf sorts the Workload's live deployments: its own by name, and
// the fallbacks by the name of the target they stand in for.
func deploymentsOf(in Input) (own map[string]*computev1alpha.WorkloadDeployment, fallbacks map[string][]*computev1alpha.WorkloadDeployment) {
	own = map[string]*computev1alpha.WorkloadDeployment{}
	fallbacks = map[string][]*computev1alpha.WorkloadDeployment{}
	for i := range in.Deployments {
		wd := &in.Deployments[i]
		if !placement.BelongsTo(wd, in.Workload.UID) || wd.DeletionTimestamp != nil {
			continue
		}
		if placement.IsFallback(wd) {
			forName := wd.Labels[computev1alpha.FailoverForLabel]
			fallbacks[forName] = append(fallbacks[forName], wd)
			continue
		}
		own[wd.Name] = wd
	}
	return own, fallbacks
}

// ownLocations returns the names of the Locations placement's own targets
// (not fallbacks) run in.
func ownLocations(targets []placement.Target, placementName string) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		if t.Placement == placementName && t.FailoverFor == nil && t.Location != nil {
			out[t.Location.Name] = true
		}
	}
	return out
}

// decideAll adds to the plan the decisions of the placement's own targets
// that have a deployment (own, by name), with the fallbacks that stand in
// for each.
func (pl *planner) decideAll(own map[string]*computev1alpha.WorkloadDeployment, fallbacks map[string][]*computev1alpha.WorkloadDeployment, active *int) {
	for _, t := range pl.in.Targets {
		if t.Placement != pl.placement || t.FailoverFor != nil {
			continue
		}
		wd := own[t.Name]
		if wd == nil {
			continue
		}
		if d, ok := pl.decide(t, wd, fallbacks[t.Name], active); ok {
			pl.plan.Decisions = append(pl.plan.Decisions, d)
		}
	}
}

// planner decides the targets of one placement.
type planner struct {
	in        Input
	spec      *Spec
	placement string
	// own are the names of the placement's own Locations.
	own  map[string]bool
	plan *Outcome
}

// decide plans target t, run by wd, with the fallback deployments that
// stand in for it; ok is false when t is not, and was not, unreachable.
func (pl *planner) decide(t placement.Target, wd *computev1alpha.WorkloadDeployment, fbs []*computev1alpha.WorkloadDeployment, active *int) (Decision, bool) {
	d := Decision{Target: t, Deployment: wd}
	since, dark := UnreachableSince(wd)
	if dark {
		d.Status.UnreachableSince = &metav1.Time{Time: since}
	}
	current := pl.current(fbs)
	if current == nil {
		if !dark {
			return d, false
		}
		return pl.failOver(d, since, active), true
	}
	return pl.followFailedOver(d, current, dark), true
}

// failOver decides d's target, unreachable since since and with no
// fallback yet: it is tolerated until its toleration ends, then pending
// while the Workload has its maximum of Locations failed over or no
// fallback can take its replicas, else it starts on the first fallback that
// can (counted in active).
func (pl *planner) failOver(d Decision, since time.Time, active *int) Decision {
	now, t := pl.in.Now, d.Target
	at := since.Add(pl.spec.Toleration)
	d.Status.FailoverAt = &metav1.Time{Time: at}
	if now.Before(at) {
		d.Status.Phase = computev1alpha.FailoverTolerating
		d.Status.Message = fmt.Sprintf("%s unreachable since %s; its replicas fail over at %s if it stays unreachable",
			t.Label(), clock(d.Status.UnreachableSince), clock(d.Status.FailoverAt))
		pl.plan.requeue(at.Sub(now))
		return d
	}
	d.Status.FailoverAt = nil
	if *active >= pl.spec.MaxLocations {
		d.Status.Phase = computev1alpha.FailoverPending
		d.Status.Message = fmt.Sprintf("%s unreachable since %s, past its toleration; the Workload already has %d Location(s) failed over (maxFailedOverLocations %d)",
			t.Label(), clock(d.Status.UnreachableSince), *active, pl.spec.MaxLocations)
		pl.plan.requeue(PendingPoll)
		return d
	}
	fb, why := pl.choose(t, d.Deployment, 0)
	if fb == nil {
		d.Status.Phase = computev1alpha.FailoverPending
		d.Status.Message = fmt.Sprintf("%s unreachable since %s, past its toleration; no fallback can take its replicas: %s",
			t.Label(), clock(d.Status.UnreachableSince), why)
		pl.plan.requeue(PendingPoll)
		return d
	}
	*active++
	d.Fallback, d.Start = fb, true
	pl.failedOver(&d, now)
	return d
}

// followFailedOver decides d's target, whose replicas run in current, a
// fallback: they stay there while the target is dark, drain once it is back
// in full for ReturnAfter, and move on to a later fallback when current
// refuses them.
func (pl *planner) followFailedOver(d Decision, current *computev1alpha.WorkloadDeployment, dark bool) Decision {
	now, t := pl.in.Now, d.Target
	fb := pl.target(t, current)
	d.Fallback, d.Existing = &fb, current
	d.MovedFrom = current.Annotations[computev1alpha.FailoverMovedFromAnnotation]
	failedAt := current.CreationTimestamp.Time
	if failedAt.IsZero() {
		failedAt = now
	}
	if !dark && Returned(d.Deployment) {
		return pl.returning(d, current, failedAt)
	}
	pl.failedOver(&d, failedAt)
	if !dark {
		d.Status.Message = fmt.Sprintf("%s is reachable again; the %d replica(s) in %s drain once it is Available at its current template for %s",
			t.Label(), d.Status.Replicas, fb.Label(), pl.spec.ReturnAfter)
	}
	if why := pl.refused(current); why != "" {
		index := slices.Index(pl.spec.Fallbacks, current.Spec.LocationRef.NameOrEmpty())
		next, whyNot := pl.choose(t, d.Deployment, index+1)
		if next == nil {
			d.Status.Message += fmt.Sprintf("; %s refuses them (%s) and no later fallback can take them (%s): it keeps them and retries", fb.Label(), why, whyNot)
			pl.plan.requeue(PendingPoll)
			return d
		}
		d.Previous, d.Fallback, d.Existing, d.Start = d.Fallback, next, nil, true
		d.MovedFrom = fmt.Sprintf("%s, which refuses them: %s", fb.Label(), why)
		pl.failedOver(&d, now)
	}
	return d
}

// returning decides d's target, back and Available at its current template
// while its replicas run in current (failed over at failedAt): the fallback
// drains once the target has been back for ReturnAfter, and until then d
// says when.
func (pl *planner) returning(d Decision, current *computev1alpha.WorkloadDeployment, failedAt time.Time) Decision {
	now := pl.in.Now
	returning, err := time.Parse(time.RFC3339, current.Annotations[computev1alpha.FailoverReturningSinceAnnotation])
	if err != nil {
		returning = now
	}
	d.ReturningSince = returning.UTC().Format(time.RFC3339)
	back := returning.Add(pl.spec.ReturnAfter)
	if !now.Before(back) {
		// Back in full for the hold-down: the fallback drains.
		d.Fallback, d.Existing, d.Drain = nil, nil, current
		return d
	}
	pl.failedOver(&d, failedAt)
	d.Status.Phase = computev1alpha.FailoverReturning
	d.Status.ReturnAt = &metav1.Time{Time: back}
	d.Status.Message = fmt.Sprintf("%s is back and Available at its current template; the %d replica(s) in %s drain at %s if it stays so",
		d.Target.Label(), d.Status.Replicas, d.Fallback.Label(), clock(d.Status.ReturnAt))
	pl.plan.requeue(back.Sub(now))
	return d
}

// failedOver fills d's status for its fallback, failed over at at.
func (pl *planner) failedOver(d *Decision, at time.Time) {
	fb := d.Fallback
	d.Status.Phase = computev1alpha.FailoverFailedOver
	d.Status.FailoverAt = &metav1.Time{Time: at}
	d.Status.CityCode, d.Status.Location, d.Status.DeploymentName = fb.CityCode, fb.Location.DeepCopy(), fb.Name
	d.Status.Replicas = pl.replicas()
	d.Status.Message = fmt.Sprintf("%s unreachable since %s; %d replica(s) failed over to %s at %s; they return when %s is Available for %s",
		d.Target.Label(), clock(d.Status.UnreachableSince), d.Status.Replicas, fb.Label(), clock(d.Status.FailoverAt),
		d.Target.Label(), pl.spec.ReturnAfter)
	if d.MovedFrom != "" {
		d.Status.Message += " (moved from " + d.MovedFrom + ")"
	}
}

// replicas is how many replicas a fallback of the placement runs: what
// each of its Locations runs.
func (pl *planner) replicas() int32 {
	for i := range pl.in.Workload.Spec.Placements {
		if p := &pl.in.Workload.Spec.Placements[i]; p.Name == pl.placement {
			return p.ScaleSettings.MinReplicas
		}
	}
	return 0
}

// current returns the fallback deployment that stands in for a target:
// the one furthest down the fallback list (a move creates the next before
// the one it leaves is deleted); the others drain.
func (pl *planner) current(fbs []*computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	var best *computev1alpha.WorkloadDeployment
	bestIndex := -2
	for _, fb := range fbs {
		if fb.Spec.PlacementName != pl.placement {
			continue
		}
		i := slices.Index(pl.spec.Fallbacks, fb.Spec.LocationRef.NameOrEmpty())
		if i > bestIndex || (i == bestIndex && fb.Name < best.Name) {
			best, bestIndex = fb, i
		}
	}
	return best
}

// choose returns the first fallback from index from that can take t's
// replicas, else nil and why none can.
func (pl *planner) choose(t placement.Target, wd *computev1alpha.WorkloadDeployment, from int) (*placement.Target, string) {
	var why []string
	for _, name := range pl.spec.Fallbacks[min(from, len(pl.spec.Fallbacks)):] {
		l, reason := pl.eligible(t, name)
		if reason != "" {
			why = append(why, name+" ("+reason+")")
			continue
		}
		ref := &computev1alpha.LocationReference{Namespace: l.Ref.Namespace, Name: l.Ref.Name}
		name := names.FallbackDeploymentName(pl.in.Workload.Name, pl.in.Workload.UID, pl.placement, l.CityCode, ref.Namespace, ref.Name, wd.Name)
		fb := placement.Fallback(pl.placement, l.CityCode, ref, pl.in.Cities, &t, name)
		return &fb, ""
	}
	if len(why) == 0 {
		why = append(why, "no fallback is listed after the one that refused")
	}
	return nil, strings.Join(why, ", ")
}

// eligible finds the bound Location name and says why it cannot take t's
// replicas; empty when it can.
func (pl *planner) eligible(t placement.Target, name string) (locations.Location, string) {
	var found *locations.Location
	for _, l := range pl.in.Cities.All() {
		if l.Ref.Name == name {
			found = &l
			break
		}
	}
	switch {
	case found == nil:
		return locations.Location{}, "not bound to the project"
	case t.Location != nil && t.Location.Name == name:
		return *found, "the unreachable Location itself"
	case pl.own[name] && !pl.spec.AllowPlacementLocations:
		return *found, "one of the placement's own Locations; set allowPlacementLocations to use it"
	case !found.Ready:
		return *found, "not ready"
	case pl.in.Reachable != nil && !pl.in.Reachable(found.CityCode):
		return *found, "its cell is unreachable"
	}
	return *found, ""
}

// target is the fallback target kept for t, run by wd.
func (pl *planner) target(t placement.Target, wd *computev1alpha.WorkloadDeployment) placement.Target {
	return placement.Fallback(pl.placement, wd.Spec.CityCode, wd.Spec.LocationRef, pl.in.Cities, &t, wd.Name)
}

// refusalReasons are the reasons a fallback's deployment reports when it
// will not run the replicas there, but another Location might.
var refusalReasons = []string{
	computev1alpha.ReasonQuotaExceeded, computev1alpha.ReasonQuotaNoBudget,
	computev1alpha.ReasonNetworkUnavailable, computev1alpha.ReasonLocationNotReady,
}

// refused says why the fallback deployment wd does not run the replicas
// (empty when it does or may yet): it reports a refusal, its Location is
// no longer listed, bound or ready, or its own cell has been unreachable
// past the toleration.
func (pl *planner) refused(wd *computev1alpha.WorkloadDeployment) string {
	name := wd.Spec.LocationRef.NameOrEmpty()
	if !slices.Contains(pl.spec.Fallbacks, name) {
		return "no longer a fallback of the placement"
	}
	for _, l := range pl.in.Cities.All() {
		if l.Ref.Name == name && !l.Ready {
			return "its Location is not ready"
		}
	}
	if !slices.ContainsFunc(pl.in.Cities.All(), func(l locations.Location) bool { return l.Ref.Name == name }) {
		return "its Location is no longer bound to the project"
	}
	if since, dark := UnreachableSince(wd); dark {
		if !pl.in.Now.Before(since.Add(pl.spec.Toleration)) {
			return "its own cell has been unreachable since " + since.UTC().Format(time.TimeOnly)
		}
		pl.plan.requeue(since.Add(pl.spec.Toleration).Sub(pl.in.Now))
		return ""
	}
	if wd.Status.ObservedGeneration < wd.Generation {
		return ""
	}
	for _, t := range []string{computev1alpha.ConditionAvailable, computev1alpha.ConditionReplicasReady} {
		if c := meta.FindStatusCondition(wd.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse && slices.Contains(refusalReasons, c.Reason) {
			return c.Reason
		}
	}
	return ""
}

// UnreachableSince returns when wd's cell was found unreachable (its
// Available condition turned Unknown for CellUnreachable), and whether it
// is.
func UnreachableSince(wd *computev1alpha.WorkloadDeployment) (time.Time, bool) {
	if wd.Status.LastSeenTime == nil {
		return time.Time{}, false
	}
	if c := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAvailable); c != nil && c.Reason == computev1alpha.ReasonCellUnreachable {
		return c.LastTransitionTime.Time, true
	}
	return wd.Status.LastSeenTime.Time, true
}

// Returned reports whether wd's cell is heard from and reports it
// Available at its current spec with every desired replica ready and
// updated.
func Returned(wd *computev1alpha.WorkloadDeployment) bool {
	if wd.Status.LastSeenTime != nil || wd.Status.ObservedGeneration < wd.Generation {
		return false
	}
	c := wd.Status.ReplicaCounts
	return meta.IsStatusConditionTrue(wd.Status.Conditions, computev1alpha.ConditionAvailable) &&
		c.ReadyReplicas >= c.DesiredReplicas && c.UpdatedReplicas >= c.DesiredReplicas
}

// clock formats a time for a message.
func clock(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.TimeOnly)
}
