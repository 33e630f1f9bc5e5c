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

// rollout is the plan of the rollout across cities and the targets it
// shaped.
type rollout struct {
	plan cityrollout.Plan
	// target is the template hash of the Workload's current template.
	target string
	// keys are the planned cities' "placement/CITY" keys, by target index.
	keys map[int]string
	// placements and codes of each planned key.
	placements, codes map[string]string
	// numbers are the revision numbers by template hash.
	numbers map[string]int64
	// notes are messages for cities whose decision could not be applied
	// as planned (a revision no longer in the history).
	notes map[string]string
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// planRollout decides which revision every city's WorkloadDeployment runs
// and rewrites the targets' desired deployments to carry it: the template of
// that revision (with the city's own restart) and the rollout annotations.
// A city keeping its revision keeps the template its deployment has.
func (r *Reconciler) planRollout(s *scope, targets []placement.Target, current *revision.Current) *rollout {
	w := s.workload
	now := r.now()
	ro := &rollout{
		target:     names.TemplateHash(&w.Spec.Template),
		keys:       map[int]string{},
		placements: map[string]string{},
		codes:      map[string]string{},
		numbers:    map[string]int64{},
		notes:      map[string]string{},
	}
	for i := range s.revisions {
		rev := &s.revisions[i]
		if h := rev.Labels[revision.TemplateHashLabel]; h != "" {
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

	cities := make([]cityrollout.City, 0, len(targets))
	index := make([]int, 0, len(targets))
	for i := range targets {
		t := &targets[i]
		wd := existing[t.Name]
		if t.Desired == nil || (wd == nil && t.KeepExisting) || (wd != nil && wd.DeletionTimestamp != nil) {
			continue
		}
		key := t.Placement + "/" + t.CityCode
		ro.keys[i], ro.placements[key], ro.codes[key] = key, t.Placement, t.CityCode
		cities = append(cities, observeCity(key, t, wd, ro.target))
		index = append(index, i)
	}

	st := cityrollout.StrategyOf(w.Spec.Rollout)
	if w.Annotations[computev1alpha.RolloutAtOnceAnnotation] == ro.target {
		st.Kind = computev1alpha.AllAtOnceCityRollout
	}
	ro.plan = cityrollout.Make(cityrollout.Input{
		Strategy:     st,
		Target:       ro.target,
		ApprovedWave: approvedWave(w, ro.target),
		Cities:       cities,
		Now:          now,
	})

	for j, d := range ro.plan.Cities {
		t := &targets[index[j]]
		ro.shape(s, t, existing[t.Name], cities[j], d, now)
	}
	return ro
}

// observeCity reads one city's rollout state from its deployment.
func observeCity(key string, t *placement.Target, wd *computev1alpha.WorkloadDeployment, target string) cityrollout.City {
	c := cityrollout.City{Key: key, Code: t.CityCode}
	if wd == nil {
		return c
	}
	c.Revision = wd.Annotations[computev1alpha.RevisionHashAnnotation]
	if c.Revision == "" {
		// A deployment from before rollouts across cities: it runs the
		// target when its template is the target's, else an older
		// template that stays until its wave.
		c.Revision = "unrecorded-" + names.TemplateHash(&wd.Spec.Template)
		if equalTemplates(&wd.Spec.Template, &t.Desired.Spec.Template) {
			c.Revision = target
		}
	}
	c.Previous = wd.Annotations[computev1alpha.PreviousRevisionHashAnnotation]
	if at, err := time.Parse(time.RFC3339, wd.Annotations[computev1alpha.RevisionAppliedAtAnnotation]); err == nil {
		c.AppliedAt = at
	}
	if from, reason, ok := strings.Cut(wd.Annotations[computev1alpha.RolledBackFromAnnotation], ":"); ok {
		c.RolledBackFrom, c.RollbackReason = from, reason
	}
	c.Soaked = c.Revision != "" && wd.Annotations[computev1alpha.RevisionSoakedAnnotation] == c.Revision

	settled := wd.Status.ObservedGeneration >= wd.Generation
	if rr := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionReplicasReady); settled && rr != nil {
		c.Ready = rr.Status == metav1.ConditionTrue && rr.ObservedGeneration >= wd.Generation
		c.ReadySince = rr.LastTransitionTime.Time
		if !c.Ready && cityrollout.IsHalting(rr.Reason) {
			c.Failure, c.FailureMessage = rr.Reason, rr.Message
		}
	}
	if av := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAvailable); settled && !c.Ready && c.Failure == "" &&
		av != nil && cityrollout.IsHalting(av.Reason) {
		c.Failure, c.FailureMessage = av.Reason, av.Message
	}
	return c
}

// shape rewrites t's desired deployment to carry decision d for city c.
func (ro *rollout) shape(s *scope, t *placement.Target, wd *computev1alpha.WorkloadDeployment,
	c cityrollout.City, d cityrollout.CityPlan, now time.Time) {
	w := s.workload
	desired := t.Desired.DeepCopy()
	ann := map[string]string{}
	keep := func(key string) {
		if wd != nil && wd.Annotations[key] != "" {
			ann[key] = wd.Annotations[key]
		}
	}
	for _, k := range []string{computev1alpha.RevisionHashAnnotation, computev1alpha.PreviousRevisionHashAnnotation,
		computev1alpha.RevisionAppliedAtAnnotation, computev1alpha.RolledBackFromAnnotation, computev1alpha.RevisionSoakedAnnotation} {
		keep(k)
	}

	switch {
	case d.Revision == ro.target:
		ann[computev1alpha.RevisionHashAnnotation] = ro.target
		if c.Revision != ro.target && c.Revision != "" && !strings.HasPrefix(c.Revision, "unrecorded-") {
			ann[computev1alpha.PreviousRevisionHashAnnotation] = c.Revision
		}
		if d.Soaked {
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
		desired.Spec.Template = placement.CityTemplate(w, &wd.Spec.Template, t.CityCode)
	default:
		// A rollback to the previous revision, or a new city created at the
		// base revision: the template comes from the history.
		tpl, ok := templateOf(s.revisions, d.Revision)
		if !ok {
			if wd != nil {
				desired.Spec.Template = placement.CityTemplate(w, &wd.Spec.Template, t.CityCode)
				ro.notes[t.Placement+"/"+t.CityCode] = fmt.Sprintf("revision %s is no longer in the history (revisionHistoryLimit); the city keeps its template", d.Revision)
				break
			}
			// A new city whose base revision is gone gets the target.
			ann[computev1alpha.RevisionHashAnnotation] = ro.target
			break
		}
		desired.Spec.Template = placement.CityTemplate(w, tpl, t.CityCode)
		ann[computev1alpha.RevisionHashAnnotation] = d.Revision
		if d.Rollback {
			ann[computev1alpha.RolledBackFromAnnotation] = ro.target + ":" + d.Reason
		}
	}
	if wd == nil || !equalTemplates(&wd.Spec.Template, &desired.Spec.Template) {
		// The deadline of a city runs from its last template change (a
		// new revision or a restart).
		ann[computev1alpha.RevisionAppliedAtAnnotation] = now.UTC().Format(time.RFC3339)
	}
	if desired.Annotations == nil {
		desired.Annotations = map[string]string{}
	}
	for k, v := range ann {
		desired.Annotations[k] = v
	}
	t.Desired = desired
}

// templateOf returns the template of the revision with hash.
func templateOf(revs []appsv1.ControllerRevision, hash string) (*computev1alpha.InstanceTemplateSpec, bool) {
	for i := range revs {
		if revs[i].Labels[revision.TemplateHashLabel] != hash {
			continue
		}
		tpl, err := revision.Template(&revs[i])
		if err == nil && names.TemplateHash(tpl) == hash {
			return tpl, true
		}
	}
	return nil, false
}

// equalTemplates compares templates by hash.
func equalTemplates(a, b *computev1alpha.InstanceTemplateSpec) bool {
	return names.TemplateHash(a) == names.TemplateHash(b)
}

// approvedWave reads the RolloutApprovedAnnotation for the target.
func approvedWave(w *computev1alpha.Workload, target string) int {
	hash, wave, ok := strings.Cut(w.Annotations[computev1alpha.RolloutApprovedAnnotation], ":")
	if !ok || hash != target {
		return 0
	}
	n, err := strconv.Atoi(wave)
	if err != nil {
		return 0
	}
	return n
}

// rolloutStatus reports the rollout.
func (ro *rollout) status(current *revision.Current, strategy computev1alpha.CityRolloutStrategyType) *computev1alpha.WorkloadRolloutStatus {
	p := ro.plan
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
			Placement: ro.placements[d.Key], CityCode: ro.codes[d.Key], Wave: int32(d.Wave),
			TemplateHash: d.Revision, Revision: ro.numbers[d.Revision], State: d.State,
			Reason: d.Reason, Message: status.Truncate(cmp.Or(ro.notes[d.Key], d.Message)),
		}
		if strings.HasPrefix(d.Revision, "unrecorded-") {
			cs.TemplateHash = ""
		}
		out.Cities = append(out.Cities, cs)
	}
	slices.SortFunc(out.Cities, func(a, b computev1alpha.CityRolloutStatus) int {
		return cmp.Or(cmp.Compare(a.Wave, b.Wave), cmp.Compare(a.CityCode, b.CityCode), cmp.Compare(a.Placement, b.Placement))
	})
	return out
}

// applyRollout adds the rollout to st: status.rollout, and the Progressing
// condition when spec.rollout is set and the rollout halted, waits or is
// still soaking. Without spec.rollout the conditions are left as they are.
func applyRollout(st *computev1alpha.WorkloadStatus, w *computev1alpha.Workload, ro *rollout, current *revision.Current, now time.Time) {
	strategy := computev1alpha.AllAtOnceCityRollout
	if w.Spec.Rollout != nil {
		strategy = cmp.Or(w.Spec.Rollout.Strategy, strategy)
	}
	st.Rollout = ro.status(current, strategy)
	if w.Spec.Rollout == nil {
		return
	}
	cond := metav1.Condition{Type: computev1alpha.ConditionProgressing, ObservedGeneration: w.Generation, Message: st.Rollout.Message}
	switch st.Rollout.Phase {
	case computev1alpha.RolloutPhaseHalted:
		cond.Status, cond.Reason = metav1.ConditionFalse, computev1alpha.ReasonRolloutHalted
	case computev1alpha.RolloutPhasePaused:
		cond.Status, cond.Reason = metav1.ConditionUnknown, computev1alpha.ReasonRolloutPaused
	case computev1alpha.RolloutPhaseAwaitingApproval:
		cond.Status, cond.Reason = metav1.ConditionUnknown, computev1alpha.ReasonRolloutAwaitingApproval
	case computev1alpha.RolloutPhaseProgressing:
		if meta.IsStatusConditionTrue(st.Conditions, computev1alpha.ConditionProgressing) {
			return // the deployments' own progress says more
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, computev1alpha.ReasonWaveProgressing
	default:
		return
	}
	cond.Message = status.Truncate(cond.Message)
	// The transition time comes from the condition the Workload reports,
	// so an unchanged condition never changes the status.
	set := []metav1.Condition{}
	if prev := meta.FindStatusCondition(w.Status.Conditions, cond.Type); prev != nil {
		set = append(set, *prev)
	}
	status.SetCondition(&set, cond, metav1.NewTime(now))
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			st.Conditions[i] = set[0]
			return
		}
	}
	st.Conditions = append(st.Conditions, set[0])
	slices.SortFunc(st.Conditions, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
}

// recordRollout emits events for what the rollout did in this pass: cities
// that got the new revision, were rolled back, and a new halt.
func (ro *rollout) recordRollout(s *scope) {
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
