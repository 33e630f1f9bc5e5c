package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cityrollout"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/status"
)

// Rollout event reasons.
const (
	// EventRolloutWaveStarted: cities got the new revision.
	EventRolloutWaveStarted = "RolloutWaveStarted"
	// EventRolloutHalted: a city failed at the new revision and the rollout
	// stopped.
	EventRolloutHalted = "RolloutHalted"
	// EventRolloutRolledBack: a city returned to its previous revision.
	EventRolloutRolledBack = "RolloutRolledBack"
)

// rollout is the plan of the rollout across cities and what it decided
// each city runs.
type rollout struct {
	plan cityrollout.Schedule
	// workload is the Workload planned for; now the time of the plan.
	workload *computev1alpha.Workload
	now      time.Time
	// revisions are the Workload's revisions.
	revisions []appsv1.ControllerRevision
	// target is the template hash of the Workload's current template.
	target string
	// index maps a planned city's "placement/CITY" key to its position in
	// plan.Cities and cities.
	index map[string]int
	// cities are the planned cities as observed, existing their
	// deployments (nil for a new city), by position.
	cities   []cityrollout.City
	existing []*computev1alpha.WorkloadDeployment
	// planned are the targets planned, by key.
	planned map[string]placement.Target
	// numbers are the revision numbers by template hash.
	numbers map[string]int64
	// spellings maps each hash the revisions answer to, either spelling
	// (names.TemplateHashes), to its current one (revision.Spellings).
	spellings map[string]string
	// notes are messages, by key, for cities whose decision cannot be
	// applied as planned (a revision no longer in the history).
	notes map[string]string
}

// planRollout is the rollout phase: it decides which revision every bound
// city of targets (the placements' own; a fallback runs what the Location it
// stands in for runs) runs, from the cities as observed at s.now and fo,
// the failover decisions; revisionOf then gives each city's deployment the
// template and annotations of that revision.
func planRollout(s *scope, targets []placement.Target, current *revision.Current, fo failover.Outcome) *rollout {
	w := s.workload
	ro := &rollout{
		workload:  w,
		now:       s.now,
		revisions: s.revisions,
		target:    names.TemplateHash(&w.Spec.Template),
		index:     map[string]int{},
		planned:   map[string]placement.Target{},
		numbers:   map[string]int64{},
		notes:     map[string]string{},
		spellings: revision.Spellings(s.revisions),
	}
	for i := range s.revisions {
		rev := &s.revisions[i]
		if h := ro.canonical(rev.Labels[revision.TemplateHashLabel]); h != "" {
			ro.numbers[h] = max(ro.numbers[h], rev.Revision)
		}
	}
	if current != nil {
		ro.numbers[current.TemplateHash] = current.Number
	}

	existing := map[string]*computev1alpha.WorkloadDeployment{}
	for i := range s.deployments {
		wd := &s.deployments[i]
		if placement.BelongsTo(wd, w.UID) {
			existing[wd.Name] = wd
		}
	}
	failedOver := fo.ByTarget()
	for i := range targets {
		t := &targets[i]
		wd := existing[t.Name]
		if t.FailoverFor != nil || !t.Bound || (wd == nil && t.KeepExisting) || (wd != nil && wd.DeletionTimestamp != nil) {
			// A fallback is not a city of the rollout: it runs what the
			// Location it stands in for runs (revisionOf).
			continue
		}
		key := t.Key()
		ro.index[key] = len(ro.cities)
		ro.planned[key] = *t
		c := observeCity(w, t, wd, ro.target, ro.canonical)
		if d := failedOver[key]; d != nil && d.Existing != nil && d.Fallback != nil {
			// A failed-over Location counts in its wave as its fallback
			// does: ready when the fallback runs its revision ready.
			fc := observeCity(w, d.Fallback, d.Existing, ro.target, ro.canonical)
			c.Ready = fc.Ready && fc.Revision == c.Revision
			c.ReadySince, c.Failure, c.FailureMessage = fc.ReadySince, fc.Failure, fc.FailureMessage
		}
		ro.cities = append(ro.cities, c)
		ro.existing = append(ro.existing, wd)
	}

	st := cityrollout.StrategyOf(w.Spec.Rollout)
	if ro.canonical(w.Annotations[computev1alpha.RolloutAtOnceAnnotation]) == ro.target {
		st.Kind = computev1alpha.AllAtOnceCityRollout
	}
	ro.plan = cityrollout.Make(cityrollout.Input{
		Strategy:     st,
		Target:       ro.target,
		ApprovedWave: approvedWave(w, ro.target, ro.canonical),
		Cities:       ro.cities,
		Now:          ro.now,
	})
	for j, d := range ro.plan.Cities {
		if ro.revisionMissing(j) {
			ro.notes[d.Key] = fmt.Sprintf("revision %s is no longer in the history (revisionHistoryLimit); the city keeps its template", d.Revision)
		}
	}
	return ro
}

// revisionMissing reports whether planned city j keeps the template it
// runs because the revision the plan gives it is no longer in the history
// (revisionOf).
func (ro *rollout) revisionMissing(j int) bool {
	c, d, wd := ro.cities[j], ro.plan.Cities[j], ro.existing[j]
	if d.Revision == ro.target || d.Revision == c.Revision || wd == nil {
		return false
	}
	_, ok := revision.TemplateOf(ro.revisions, d.Revision)
	return !ok
}

// canonical returns the current spelling of a revision's hash read from an
// object (a release before SHA-256 wrote the earlier one), or hash itself
// when no revision answers to it.
func (ro *rollout) canonical(hash string) string {
	if h, ok := ro.spellings[hash]; ok {
		return h
	}
	return hash
}

// observeCity reads one city's rollout state from its deployment; canon
// spells each revision hash it reads as the plan does (rollout.canonical).
func observeCity(w *computev1alpha.Workload, t *placement.Target, wd *computev1alpha.WorkloadDeployment, target string,
	canon func(string) string) cityrollout.City {
	c := cityrollout.City{Key: t.Key(), Name: t.Label(), Code: t.CityCode}
	if wd == nil {
		return c
	}
	c.Revision = canon(wd.Annotations[computev1alpha.RevisionHashAnnotation])
	if c.Revision == "" {
		// A deployment from before rollouts across cities: it runs the
		// target when its template is the target's, else an older
		// template that stays until its wave.
		c.Revision = "unrecorded-" + names.TemplateHash(&wd.Spec.Template)
		if tpl := placement.CityTemplate(w, &w.Spec.Template, t.CityCode); equalTemplates(&wd.Spec.Template, &tpl) {
			c.Revision = target
		}
	}
	c.Previous = canon(wd.Annotations[computev1alpha.PreviousRevisionHashAnnotation])
	if at, err := time.Parse(time.RFC3339, wd.Annotations[computev1alpha.RevisionAppliedAtAnnotation]); err == nil {
		c.AppliedAt = at
	}
	if from, reason, ok := strings.Cut(wd.Annotations[computev1alpha.RolledBackFromAnnotation], ":"); ok {
		c.RolledBackFrom, c.RollbackReason = canon(from), reason
	}
	c.Soaked = c.Revision != "" && canon(wd.Annotations[computev1alpha.RevisionSoakedAnnotation]) == c.Revision

	settled := wd.Status.ObservedGeneration >= wd.Generation
	if rr := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionReplicasReady); settled && rr != nil {
		c.Ready = rr.Status == metav1.ConditionTrue && rr.ObservedGeneration >= wd.Generation
		c.ReadySince = rr.LastTransitionTime.Time
		if !c.Ready && status.HaltsRollout(rr.Reason) {
			c.Failure, c.FailureMessage = rr.Reason, rr.Message
		}
	}
	if av := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAvailable); settled && !c.Ready && c.Failure == "" &&
		av != nil && status.HaltsRollout(av.Reason) {
		c.Failure, c.FailureMessage = av.Reason, av.Message
	}
	return c
}

// revisionOf is the placement.RevisionFunc of the plan: the template of
// the revision the plan gives t's city (with the city's own restart), and
// the rollout annotations its deployment carries. A city the plan does not
// cover runs the Workload's template. It only reads ro.
func (ro *rollout) revisionOf(t *placement.Target) placement.Revision {
	if t.FailoverFor != nil {
		// A fallback runs the revision of the Location it stands in for.
		return ro.revisionOf(t.FailoverFor)
	}
	j, planned := ro.index[t.Key()]
	if !planned {
		return placement.Revision{}
	}
	w, c, d, wd := ro.workload, ro.cities[j], ro.plan.Cities[j], ro.existing[j]
	ann := map[string]string{}
	if wd != nil {
		for _, k := range []string{computev1alpha.RevisionHashAnnotation, computev1alpha.PreviousRevisionHashAnnotation,
			computev1alpha.RevisionAppliedAtAnnotation, computev1alpha.RolledBackFromAnnotation, computev1alpha.RevisionSoakedAnnotation} {
			if v := wd.Annotations[k]; v != "" {
				ann[k] = v
			}
		}
	}
	var from *computev1alpha.InstanceTemplateSpec // nil: the target's
	switch {
	case d.Revision == ro.target:
		// Recorded hashes that name the target keep their spelling
		// (canonical): an upgrade rewrites no annotation.
		if ro.canonical(ann[computev1alpha.RevisionHashAnnotation]) != ro.target {
			ann[computev1alpha.RevisionHashAnnotation] = ro.target
		}
		if c.Revision != ro.target && c.Revision != "" && !strings.HasPrefix(c.Revision, "unrecorded-") {
			ann[computev1alpha.PreviousRevisionHashAnnotation] = c.Revision
		}
		if d.Soaked && ro.canonical(ann[computev1alpha.RevisionSoakedAnnotation]) != ro.target {
			ann[computev1alpha.RevisionSoakedAnnotation] = ro.target
		}
		if ann[computev1alpha.RolledBackFromAnnotation] != "" {
			// Annotations are merged, never removed: an empty value is
			// "not rolled back".
			ann[computev1alpha.RolledBackFromAnnotation] = ""
		}
	case d.Revision == c.Revision && wd != nil:
		// Keep the revision the city runs: its own template, with any new
		// restart of the city.
		from = &wd.Spec.Template
	default:
		// A rollback to the previous revision, or a new city created at the
		// base revision: the template comes from the history.
		tpl, ok := revision.TemplateOf(ro.revisions, d.Revision)
		switch {
		case ok:
			from = tpl
			ann[computev1alpha.RevisionHashAnnotation] = d.Revision
			if d.Rollback {
				ann[computev1alpha.RolledBackFromAnnotation] = ro.target + ":" + d.Reason
			}
		case wd != nil:
			// The revision is no longer in the history: the city keeps
			// its template (notes, revisionMissing).
			from = &wd.Spec.Template
		default:
			// A new city whose base revision is gone gets the target.
			ann[computev1alpha.RevisionHashAnnotation] = ro.target
		}
	}
	if from == nil {
		from = &w.Spec.Template
	}
	tpl := placement.CityTemplate(w, from, t.CityCode)
	if wd == nil || !equalTemplates(&wd.Spec.Template, &tpl) {
		// The deadline of a city runs from its last template change (a
		// new revision or a restart).
		ann[computev1alpha.RevisionAppliedAtAnnotation] = ro.now.UTC().Format(time.RFC3339)
	}
	return placement.Revision{Template: &tpl, Annotations: ann}
}

// equalTemplates compares templates by hash.
func equalTemplates(a, b *computev1alpha.InstanceTemplateSpec) bool {
	return names.TemplateHash(a) == names.TemplateHash(b)
}

// approvedWave reads the RolloutApprovedAnnotation for the target.
func approvedWave(w *computev1alpha.Workload, target string, canon func(string) string) int {
	hash, wave, ok := strings.Cut(w.Annotations[computev1alpha.RolloutApprovedAnnotation], ":")
	if !ok || canon(hash) != target {
		return 0
	}
	n, err := strconv.Atoi(wave)
	if err != nil {
		return 0
	}
	return n
}

// status reports the rollout (status.rollout).
func (ro *rollout) status(current *revision.Current) *computev1alpha.WorkloadRolloutStatus {
	p := ro.plan
	strategy := computev1alpha.AllAtOnceCityRollout
	if r := ro.workload.Spec.Rollout; r != nil {
		strategy = cmp.Or(r.Strategy, strategy)
	}
	out := &computev1alpha.WorkloadRolloutStatus{
		Revision:     ro.numbers[ro.target],
		TemplateHash: ro.target,
		Strategy:     strategy,
		Phase:        p.Phase,
		Wave:         int32(p.Wave),
		Waves:        int32(len(p.Waves)),
		Message:      status.Truncate(p.Message),
	}
	if current != nil {
		out.Revision = current.Number
	}
	for _, d := range p.Cities {
		cs := computev1alpha.CityRolloutStatus{
			Placement: ro.planned[d.Key].Placement, CityCode: ro.planned[d.Key].CityCode, Location: ro.planned[d.Key].Location.DeepCopy(), Wave: int32(d.Wave),
			TemplateHash: d.Revision, Revision: ro.numbers[d.Revision], State: d.State,
			Reason: d.Reason, Message: status.Truncate(cmp.Or(ro.notes[d.Key], d.Message)),
		}
		if strings.HasPrefix(d.Revision, "unrecorded-") {
			cs.TemplateHash = ""
		}
		out.Cities = append(out.Cities, cs)
	}
	slices.SortFunc(out.Cities, func(a, b computev1alpha.CityRolloutStatus) int {
		return cmp.Or(cmp.Compare(a.Wave, b.Wave), cmp.Compare(a.CityCode, b.CityCode), cmp.Compare(a.Placement, b.Placement),
			cmp.Compare(placement.KeyOf(a.Placement, a.CityCode, a.Location), placement.KeyOf(b.Placement, b.CityCode, b.Location)))
	})
	return out
}

// record emits events for what the rollout did in this pass: cities that
// got the new revision, were rolled back, and a new halt (s.workload's
// status as read says whether the halt is new).
func (ro *rollout) record(s *scope) {
	w := s.workload
	var started, rolledBack []string
	for _, d := range ro.plan.Cities {
		switch {
		case d.Advance:
			started = append(started, d.Key)
		case d.Rollback:
			rolledBack = append(rolledBack, d.Key)
		}
	}
	if len(started) > 0 && w.Status.Rollout != nil {
		s.recorder.Eventf(w, nil, corev1.EventTypeNormal, EventRolloutWaveStarted, "Rollout",
			"Wave %d of %d: %s get revision %d", ro.plan.Wave, len(ro.plan.Waves), strings.Join(started, ", "), ro.numbers[ro.target])
	}
	if len(rolledBack) > 0 {
		s.recorder.Eventf(w, nil, corev1.EventTypeWarning, EventRolloutRolledBack, "Rollback",
			"Rolled %s back to the previous revision: %s", strings.Join(rolledBack, ", "), ro.plan.Message)
	}
	if h := ro.plan.Halt; h != nil && (w.Status.Rollout == nil || w.Status.Rollout.Phase != computev1alpha.RolloutPhaseHalted) {
		s.recorder.Eventf(w, nil, corev1.EventTypeWarning, EventRolloutHalted, "Rollout", "%s", status.Truncate(ro.plan.Message))
	}
}
