package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/workloadstatus"
)

var rolloutNow = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

// rolloutScope is a Workload whose template moved from image 1.0 to 2.0,
// rolled DFW first, then LHR, with both cities running 1.0 and ready.
func rolloutScope(t *testing.T) (*scope, []placement.Target) {
	t.Helper()
	w := rolloutWorkload()
	cities := locations.ReadyCities("l", "DFW", "LHR")

	// Revision 1 (1.0) as the history holds it, and the deployments at 1.0.
	var revs []appsv1.ControllerRevision
	plan, err := revision.Compute(w, nil, rolloutNow.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, *plan.Create)
	old := names.TemplateHash(&w.Spec.Template)
	var wds []computev1alpha.WorkloadDeployment
	for _, tg := range placement.Expand(w, placement.Targets(w, cities, nil), nil) {
		wd := tg.Desired.DeepCopy()
		wd.Generation, wd.Status.ObservedGeneration = 1, 1
		wd.Annotations = map[string]string{computev1alpha.RevisionHashAnnotation: old,
			computev1alpha.RevisionAppliedAtAnnotation: rolloutNow.Add(-time.Hour).Format(time.RFC3339)}
		meta.SetStatusCondition(&wd.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionReplicasReady,
			Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAllReplicasReady, ObservedGeneration: 1,
			LastTransitionTime: metav1.NewTime(rolloutNow.Add(-time.Hour))})
		wds = append(wds, *wd)
	}

	// The template moves to 2.0: revision 2.
	w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "app:2.0"
	plan, err = revision.Compute(w, revs, rolloutNow)
	if err != nil {
		t.Fatal(err)
	}
	revs = append(revs, *plan.Create)
	return &scope{workload: w, now: rolloutNow, cities: cities, deployments: wds, revisions: revs}, placement.Targets(w, cities, wds)
}

// rolloutWorkload is a Workload at image 1.0 in DFW and LHR, rolled out in
// waves, DFW first.
func rolloutWorkload() *computev1alpha.Workload {
	w := &computev1alpha.Workload{}
	w.Name, w.Namespace, w.UID, w.Generation = "web", "default", "u-1", 2
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "app:1.0"}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "edge", LocationSelector: placement.CityCodesSelector([]string{"DFW", "LHR"}),
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2}}}
	w.Spec.Rollout = &computev1alpha.WorkloadRollout{Strategy: computev1alpha.WavesCityRollout,
		Waves: []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR"}}}}
	return w
}

func imageOf(t placement.Target) string {
	return t.Desired.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image
}

func TestPlanRolloutGivesEachCityTheRevisionItsWaveAllows(t *testing.T) {
	s, targets := rolloutScope(t)
	// A restart of LHR alone reaches LHR on the revision it keeps.
	s.workload.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "LHR": "2026-11-24T00:30:00Z"}
	ro := planRollout(s, targets, nil, failover.Outcome{})
	targets = expand(s.workload, targets, failover.Outcome{}, ro)

	got := map[string]string{}
	for _, tg := range targets {
		got[tg.CityCode] = imageOf(tg)
	}
	if diff := cmp.Diff(map[string]string{"DFW": "app:2.0", "LHR": "app:1.0"}, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	dfw, lhr := targets[0].Desired, targets[1].Desired
	if h := dfw.Annotations[computev1alpha.RevisionHashAnnotation]; h != ro.target {
		t.Errorf("DFW records revision %q, want the target %q", h, ro.target)
	}
	if dfw.Annotations[computev1alpha.PreviousRevisionHashAnnotation] == "" || dfw.Annotations[computev1alpha.RevisionAppliedAtAnnotation] != "2026-11-24T01:00:00Z" {
		t.Errorf("DFW annotations %v: want the previous revision and the time it got the new one", dfw.Annotations)
	}
	if lhr.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] != "2026-11-24T00:30:00Z" {
		t.Errorf("LHR's restart did not reach its kept template: %v", lhr.Spec.Template.Metadata.Annotations)
	}
	if ro.plan.Phase != computev1alpha.RolloutPhaseProgressing || ro.plan.Wave != 1 {
		t.Errorf("phase %s wave %d, want Progressing wave 1", ro.plan.Phase, ro.plan.Wave)
	}
}

func TestRolloutStatusDoesNotChurn(t *testing.T) {
	s, targets := rolloutScope(t)
	s.deployments[0].Status.Conditions[0].Status = metav1.ConditionFalse
	s.deployments[0].Status.Conditions[0].Reason = computev1alpha.ReasonImageUnavailable
	s.deployments[0].Annotations[computev1alpha.RevisionHashAnnotation] = names.TemplateHash(&s.workload.Spec.Template)
	ro := planRollout(s, targets, nil, failover.Outcome{})
	in := workloadstatus.Input{Workload: s.workload, Rollout: ro.status(nil), Settled: true, Now: metav1.NewTime(rolloutNow)}
	for i, tg := range expand(s.workload, targets, failover.Outcome{}, ro) {
		in.Cities = append(in.Cities, workloadstatus.City{Target: tg, Deployment: &s.deployments[i]})
	}

	first := workloadstatus.Compute(in)
	prog := meta.FindStatusCondition(first.Conditions, computev1alpha.ConditionProgressing)
	if prog == nil || prog.Reason != computev1alpha.ReasonRolloutHalted || prog.Status != metav1.ConditionFalse {
		t.Fatalf("Progressing = %+v, want False/RolloutHalted", prog)
	}

	// The next pass, an hour later, sees its own status: nothing changes.
	s.workload.Status = first
	in.Now = metav1.NewTime(rolloutNow.Add(time.Hour))
	second := workloadstatus.Compute(in)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("the status changed on an unchanged pass (-first +second):\n%s", diff)
	}
}

// TestARolloutRecordedBeforeSHA256StaysComplete: both cities run revision 2,
// soaked, as a release before SHA-256 recorded it (the revisions' labels and
// the deployments' annotations in the earlier spelling of the hash). The
// upgraded controller sees the rollout complete, each city at revision 2,
// and plans no wave; without reading both spellings every city would look
// like an older revision and the rollout would start again.
func TestARolloutRecordedBeforeSHA256StaysComplete(t *testing.T) {
	s, _ := rolloutScope(t)
	legacy := func(tpl *computev1alpha.InstanceTemplateSpec) string { return names.HashesOf(tpl).Legacy() }
	for i := range s.revisions {
		tpl, err := revision.Template(&s.revisions[i])
		if err != nil {
			t.Fatal(err)
		}
		s.revisions[i].Labels[revision.TemplateHashLabel] = legacy(tpl)
	}
	first, err := revision.Template(&s.revisions[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.deployments {
		wd := &s.deployments[i]
		wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "app:2.0"
		wd.Annotations[computev1alpha.RevisionHashAnnotation] = legacy(&s.workload.Spec.Template)
		wd.Annotations[computev1alpha.RevisionSoakedAnnotation] = legacy(&s.workload.Spec.Template)
		wd.Annotations[computev1alpha.PreviousRevisionHashAnnotation] = legacy(first)
	}
	targets := placement.Targets(s.workload, s.cities, s.deployments)
	current := &revision.Current{Number: 2, TemplateHash: names.TemplateHash(&s.workload.Spec.Template)}
	ro := planRollout(s, targets, current, failover.Outcome{})
	if ro.plan.Phase != computev1alpha.RolloutPhaseComplete {
		t.Fatalf("phase %s (%s), want Complete", ro.plan.Phase, ro.plan.Message)
	}
	for _, c := range ro.status(current).Cities {
		if c.Revision != 2 || c.TemplateHash != ro.target {
			t.Errorf("city %s at revision %d hash %q, want 2 and %q", c.CityCode, c.Revision, c.TemplateHash, ro.target)
		}
	}
	for _, tg := range expand(s.workload, targets, failover.Outcome{}, ro) {
		if imageOf(tg) != "app:2.0" {
			t.Errorf("%s gets %s, want app:2.0", tg.CityCode, imageOf(tg))
		}
		// Nothing to rewrite: the recorded spellings stay.
		for _, k := range []string{computev1alpha.RevisionHashAnnotation, computev1alpha.RevisionSoakedAnnotation} {
			if got, want := tg.Desired.Annotations[k], legacy(&s.workload.Spec.Template); got != want {
				t.Errorf("%s: %s = %q, want the recorded %q", tg.CityCode, k, got, want)
			}
		}
	}
}
