package workloadstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	st "github.com/citycells/compute/internal/status"
)

// scenario builds the input of computeStatus: a Workload, its cities and
// what their cells report.
type scenario struct {
	w       *computev1alpha.Workload
	cities  locations.Cities
	reports map[string]func(*computev1alpha.WorkloadDeployment)
	missing map[string]bool
}

func makeScenario(cities ...string) *scenario {
	w := &computev1alpha.Workload{}
	w.Name, w.Namespace, w.UID, w.Generation = "web", "default", "u-1", 3
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "nginx"}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "edge", CityCodes: cities,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2}}}
	return &scenario{w: w, cities: locations.ReadyCities("l", cities...), reports: map[string]func(*computev1alpha.WorkloadDeployment){}, missing: map[string]bool{}}
}

// unbound removes a city from the project.
func (s *scenario) unbound(city string) *scenario {
	delete(s.cities, city)
	return s
}

// notCreated leaves a city's deployment uncreated.
func (s *scenario) notCreated(city string) *scenario {
	s.missing[city] = true
	return s
}

// ready has a city's cell report ready of desired replicas ready.
func (s *scenario) ready(city string, ready int32) *scenario {
	s.reports[city] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, ready, metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "ready")
	}
	return s
}

// blocked has a city's cell report no replica ready, for reason.
func (s *scenario) blocked(city, reason string) *scenario {
	s.reports[city] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 0, metav1.ConditionFalse, reason, "instance "+wd.Name+"-0 is blocked: "+reason)
	}
	return s
}

// stale has a city's cell report for an older generation.
func (s *scenario) stale(city string) *scenario {
	s.reports[city] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 2, metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "ready")
		wd.Status.ObservedGeneration = wd.Generation - 1
	}
	return s
}

// unreachable has a city's cell unheard from since lastSeen, as the
// federator marks it: last known counts, Unknown conditions.
func (s *scenario) unreachable(city string, lastSeen time.Time) *scenario {
	s.reports[city] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 2, metav1.ConditionUnknown, computev1alpha.ReasonCellUnreachable,
			"the city's cell is unreachable: no heartbeat; last known: Available=True (ReplicasAvailable)")
		wd.Status.Conditions[1].Status, wd.Status.Conditions[1].Reason = metav1.ConditionUnknown, computev1alpha.ReasonCellUnreachable
		seen := metav1.NewTime(lastSeen)
		wd.Status.LastSeenTime = &seen
	}
	return s
}

func report(wd *computev1alpha.WorkloadDeployment, ready int32, status metav1.ConditionStatus, reason, msg string) {
	wd.Status.ObservedGeneration = wd.Generation
	wd.Status.ReplicaCounts = computev1alpha.ReplicaCounts{Replicas: 2, CurrentReplicas: ready, UpdatedReplicas: 2, ReadyReplicas: ready, DesiredReplicas: 2}
	// ReplicasReady as the cell computes it: True with every replica
	// ready, else the failure an Instance reports (or ReplicasNotReady).
	rr := metav1.Condition{Type: computev1alpha.ConditionReplicasReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAllReplicasReady}
	if ready < 2 {
		rr.Status, rr.Reason = metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady
		if st.Failing(reason) {
			rr.Reason = reason
		}
	}
	if status == metav1.ConditionUnknown {
		rr.Status = metav1.ConditionUnknown
	}
	wd.Status.Conditions = []metav1.Condition{
		{Type: computev1alpha.ConditionAvailable, Status: status, Reason: reason, Message: msg},
		{Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonRolloutComplete},
		rr,
	}
}

// input observes the scenario as the reconciler would after its writes.
func (s *scenario) input() Input {
	plan := placement.Diff(s.w, placement.Expand(s.w, placement.Targets(s.w, s.cities, nil), nil), nil)
	var cities []City
	for _, t := range plan.Targets {
		c := City{Target: t.Target}
		if wd := t.Desired; wd != nil && !s.missing[t.CityCode] {
			wd = wd.DeepCopy()
			wd.Generation = 1
			if r := s.reports[wd.Spec.CityCode]; r != nil {
				r(wd)
			}
			c.Deployment = wd
		}
		cities = append(cities, c)
	}
	return Input{
		Workload: s.w,
		Cities:   cities,
		Revision: &revision.Current{Number: 4, TemplateHash: "abc"},
		Settled:  true,
		Now:      metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)),
	}
}

func TestComputeStatus(t *testing.T) {
	type want struct {
		observed           int64
		available          metav1.ConditionStatus
		availableReason    string
		availableMessage   string
		progressing        metav1.ConditionStatus
		progressingReason  string
		deployments, ready int32
		cityReasons        map[string]string
	}
	tests := map[string]struct {
		scenario *scenario
		want     want
	}{
		"every cell ready: available, settled and observed": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).ready("LHR", 2),
			want: want{
				observed: 3, available: metav1.ConditionTrue, availableReason: computev1alpha.ReasonReplicasAvailable,
				availableMessage: "4 of 4 desired replicas ready; available in edge/DFW, edge/LHR",
				progressing:      metav1.ConditionFalse, progressingReason: computev1alpha.ReasonRolloutComplete,
				deployments: 2, ready: 4,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonReplicasAvailable, "LHR": computev1alpha.ReasonReplicasAvailable},
			},
		},
		"a cell that has not reported holds back the observed generation": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2),
			want: want{
				available: metav1.ConditionTrue, availableReason: computev1alpha.ReasonReplicasAvailable,
				availableMessage: "2 of 4 desired replicas ready; available in edge/DFW; not available in edge/LHR (DeploymentPending)",
				progressing:      metav1.ConditionTrue, progressingReason: computev1alpha.ReasonDeploymentPending,
				deployments: 2, ready: 2,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonReplicasAvailable, "LHR": computev1alpha.ReasonDeploymentPending},
			},
		},
		"a cell reporting an older generation holds back the observed generation": {
			scenario: makeScenario("DFW").stale("DFW"),
			want: want{
				available: metav1.ConditionTrue, availableReason: computev1alpha.ReasonReplicasAvailable,
				availableMessage: "2 of 2 desired replicas ready; available in edge/DFW",
				progressing:      metav1.ConditionTrue, progressingReason: computev1alpha.ReasonDeploymentPending,
				deployments: 1, ready: 2,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonDeploymentPending},
			},
		},
		"nothing ready: the worst blocking reason wins": {
			scenario: makeScenario("DFW", "LHR", "SIN").blocked("DFW", computev1alpha.ReasonPendingQuota).
				blocked("LHR", computev1alpha.ReasonImageUnavailable).blocked("SIN", computev1alpha.ReasonProvisioning),
			want: want{
				observed: 3, available: metav1.ConditionFalse, availableReason: computev1alpha.ReasonImageUnavailable,
				availableMessage: "edge/LHR: instance " + names.LocationDeploymentName("web", "u-1", "edge", "LHR", "l", "lhr") +
					"-0 is blocked: ImageUnavailable; also not available: edge/DFW (PendingQuota), edge/SIN (Provisioning)",
				// LHR cannot get there by waiting: kubectl's Progressing=False.
				progressing: metav1.ConditionFalse, progressingReason: computev1alpha.ReasonImageUnavailable,
				deployments: 3,
				cityReasons: map[string]string{
					"DFW": computev1alpha.ReasonPendingQuota, "LHR": computev1alpha.ReasonImageUnavailable, "SIN": computev1alpha.ReasonProvisioning,
				},
			},
		},
		"an unbound city outranks every cell reason and is not waited for": {
			scenario: makeScenario("DFW", "XYZ").unbound("XYZ").blocked("DFW", computev1alpha.ReasonQuotaExceeded),
			want: want{
				observed: 3, available: metav1.ConditionFalse, availableReason: computev1alpha.ReasonLocationNotBound,
				progressing: metav1.ConditionFalse, progressingReason: computev1alpha.ReasonLocationNotBound,
				deployments: 1,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonQuotaExceeded, "XYZ": computev1alpha.ReasonLocationNotBound},
			},
		},
		"an unreachable city keeps its last known counts, is named, and is not claimed available": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).unreachable("LHR", time.Date(2026, 11, 24, 11, 59, 0, 0, time.UTC)),
			want: want{
				observed: 3, available: metav1.ConditionTrue, availableReason: computev1alpha.ReasonReplicasAvailable,
				availableMessage: "4 of 4 desired replicas ready; available in edge/DFW; not available in edge/LHR (CellUnreachable)",
				progressing:      metav1.ConditionFalse, progressingReason: computev1alpha.ReasonRolloutComplete,
				deployments: 2, ready: 4,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonReplicasAvailable, "LHR": computev1alpha.ReasonCellUnreachable},
			},
		},
		"only unreachable or failing cities: availability is unknown": {
			scenario: makeScenario("DFW", "LHR").blocked("DFW", computev1alpha.ReasonImageUnavailable).
				unreachable("LHR", time.Date(2026, 11, 24, 11, 59, 0, 0, time.UTC)),
			want: want{
				observed: 3, available: metav1.ConditionUnknown, availableReason: computev1alpha.ReasonCellUnreachable,
				progressing: metav1.ConditionFalse, progressingReason: computev1alpha.ReasonImageUnavailable,
				deployments: 2, ready: 2,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonImageUnavailable, "LHR": computev1alpha.ReasonCellUnreachable},
			},
		},
		"a deployment not created yet is pending": {
			scenario: makeScenario("DFW").notCreated("DFW"),
			want: want{
				available: metav1.ConditionFalse, availableReason: computev1alpha.ReasonDeploymentPending,
				progressing: metav1.ConditionTrue, progressingReason: computev1alpha.ReasonDeploymentPending,
				cityReasons: map[string]string{"DFW": computev1alpha.ReasonDeploymentPending},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := Compute(tc.scenario.input())
			avail := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAvailable)
			prog := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionProgressing)
			got := want{
				observed: st.ObservedGeneration, available: avail.Status, availableReason: avail.Reason,
				progressing: prog.Status, progressingReason: prog.Reason,
				deployments: st.Deployments, ready: st.ReadyReplicas, cityReasons: map[string]string{},
			}
			if tc.want.availableMessage != "" {
				got.availableMessage = avail.Message
			}
			for _, c := range st.Placements[0].Cities {
				got.cityReasons[c.CityCode] = c.Reason
				if stale := c.Reason == computev1alpha.ReasonCellUnreachable; c.Stale != stale || (c.LastSeenTime != nil) != stale || stale && c.Available {
					t.Errorf("city %s: stale=%t lastSeenTime=%v available=%t for reason %s", c.CityCode, c.Stale, c.LastSeenTime, c.Available, c.Reason)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("Compute() mismatch (-want +got):\n%s", diff)
			}
			if st.CurrentRevision != 4 || st.CurrentTemplateHash != "abc" {
				t.Errorf("current revision = %d/%q, want 4/abc", st.CurrentRevision, st.CurrentTemplateHash)
			}
		})
	}
}

func TestComputeStatusIsStable(t *testing.T) {
	in := makeScenario("DFW", "LHR").ready("DFW", 2).blocked("LHR", computev1alpha.ReasonPendingQuota).input()
	first := Compute(in)

	// Feed the status back as the Workload's current status: nothing may
	// change, so the reconciler writes nothing.
	in.Workload = in.Workload.DeepCopy()
	in.Workload.Status = first
	second := Compute(in)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("an unchanged world changes the status (-first +second):\n%s", diff)
	}
}

func TestComputeStatusKeepsRevisionWhenItCouldNotBeRecorded(t *testing.T) {
	in := makeScenario("DFW").ready("DFW", 2).input()
	in.Workload.Status.CurrentRevision, in.Workload.Status.CurrentTemplateHash = 2, "old"
	in.Revision, in.Settled = nil, false
	st := Compute(in)
	if st.CurrentRevision != 2 || st.CurrentTemplateHash != "old" {
		t.Fatalf("current revision = %d/%q, want the previous 2/old", st.CurrentRevision, st.CurrentTemplateHash)
	}
	if st.ObservedGeneration != 0 {
		t.Fatalf("observedGeneration = %d after a failed reconcile, want it unchanged (0)", st.ObservedGeneration)
	}
}

func TestConditionTimesComeFromTheClock(t *testing.T) {
	in := makeScenario("DFW").ready("DFW", 2).input()
	st := Compute(in)
	for _, c := range st.Conditions {
		if !c.LastTransitionTime.Equal(&in.Now) {
			t.Errorf("condition %s changed at %s, want the injected clock's %s", c.Type, c.LastTransitionTime, in.Now)
		}
	}
	// A later reconcile that changes nothing keeps the times.
	in.Workload = in.Workload.DeepCopy()
	in.Workload.Status = st
	earlier := in.Now
	in.Now = metav1.NewTime(in.Now.Add(time.Hour))
	for _, c := range Compute(in).Conditions {
		if !c.LastTransitionTime.Equal(&earlier) {
			t.Errorf("unchanged condition %s moved to %s", c.Type, c.LastTransitionTime)
		}
	}
}

func TestCitiesCarryTheirRolloutTemplateAndRestart(t *testing.T) {
	in := makeScenario("DFW", "LHR").ready("DFW", 2).ready("LHR", 2).input()
	in.Cities[0].Deployment.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "2026-11-24T11:00:00Z"}
	in.Cities[0].Deployment.Status.TemplateHash = "reported"
	in.Cities[1].Deployment.Status.TemplateHash = "outdated"
	in.Cities[1].Deployment.Generation = 2 // the cell has not reported the new template yet
	in.Cities[1].Deployment.Status.ObservedGeneration = 1
	in.Rollout = &computev1alpha.WorkloadRolloutStatus{Phase: computev1alpha.RolloutPhaseProgressing, Cities: []computev1alpha.CityRolloutStatus{
		{Placement: "edge", CityCode: "DFW", Location: in.Cities[0].Location, Wave: 1, Revision: 4, State: computev1alpha.CityUpdated},
		{Placement: "edge", CityCode: "LHR", Location: in.Cities[1].Location, Wave: 2, Revision: 3, State: computev1alpha.CityWaiting},
	}}
	st := Compute(in)
	dfw, lhr := st.Placements[0].Cities[0], st.Placements[0].Cities[1]
	if dfw.TemplateHash != "reported" || dfw.RestartedAt != "2026-11-24T11:00:00Z" || dfw.Wave != 1 || dfw.Revision != 4 || dfw.Rollout != computev1alpha.CityUpdated {
		t.Errorf("DFW = %+v: want the reported template hash, its restart, wave 1, revision 4, Updated", dfw)
	}
	if want := names.TemplateHash(&in.Cities[1].Deployment.Spec.Template); lhr.TemplateHash != want || lhr.Wave != 2 || lhr.Rollout != computev1alpha.CityWaiting {
		t.Errorf("LHR = %+v: want the template hash it is written with (%s, the cell's is outdated), wave 2, Waiting", lhr, want)
	}
	if st.Rollout != in.Rollout {
		t.Error("status.rollout is not the planned rollout")
	}
}

func TestACityDroppedFromThePlacementsIsReportedWhileItsDeploymentGoes(t *testing.T) {
	in := makeScenario("DFW", "LHR").ready("DFW", 2).ready("LHR", 2).input()
	leaving := in.Cities[1].Deployment
	in.Cities = in.Cities[:1]
	in.Workload.Spec.Placements[0].CityCodes = []string{"DFW"}
	in.Leaving = []*computev1alpha.WorkloadDeployment{leaving}
	st := Compute(in)
	cities := st.Placements[0].Cities
	if len(cities) != 2 || cities[1].CityCode != "LHR" || cities[1].Reason != computev1alpha.ReasonDeploymentRemoving || cities[1].Replicas != 2 {
		t.Fatalf("cities = %+v, want LHR reported as DeploymentRemoving with its 2 replicas", cities)
	}
	if st.Deployments != 1 || st.Replicas != 2 || st.Placements[0].Replicas != 2 {
		t.Errorf("deployments %d, replicas %d (placement %d): a leaving city counts in neither", st.Deployments, st.Replicas, st.Placements[0].Replicas)
	}
}

func TestAHaltedRolloutDecidesProgressing(t *testing.T) {
	in := makeScenario("DFW").ready("DFW", 2).input()
	in.Workload.Spec.Rollout = &computev1alpha.WorkloadRollout{Strategy: computev1alpha.WavesCityRollout}
	in.Rollout = &computev1alpha.WorkloadRolloutStatus{Phase: computev1alpha.RolloutPhaseHalted, Message: "DFW: ImageUnavailable"}
	prog := meta.FindStatusCondition(Compute(in).Conditions, computev1alpha.ConditionProgressing)
	if prog.Status != metav1.ConditionFalse || prog.Reason != computev1alpha.ReasonRolloutHalted || prog.Message != "DFW: ImageUnavailable" {
		t.Errorf("Progressing = %+v, want False/RolloutHalted with the rollout's message", prog)
	}
	// Without spec.rollout the cities alone decide.
	in.Workload.Spec.Rollout = nil
	if prog := meta.FindStatusCondition(Compute(in).Conditions, computev1alpha.ConditionProgressing); prog.Reason != computev1alpha.ReasonRolloutComplete {
		t.Errorf("Progressing = %+v without spec.rollout, want the cities' RolloutComplete", prog)
	}
}

func TestAnUnreadableInputMakesTheConditionsUnknown(t *testing.T) {
	in := makeScenario("DFW").ready("DFW", 2).input()
	in.Workload.Status = Compute(in)
	st := Unknown(in.Workload, computev1alpha.ReasonObservationFailed, "cannot list Locations", in.Now)
	for _, c := range st.Conditions {
		if c.Status != metav1.ConditionUnknown || c.Reason != computev1alpha.ReasonObservationFailed {
			t.Errorf("%s = %s/%s, want Unknown/ObservationFailed", c.Type, c.Status, c.Reason)
		}
	}
	if st.ReadyReplicas != 2 || len(st.Placements) != 1 {
		t.Errorf("the rest of the status changed: %+v", st)
	}
}

func TestAnInstanceTypeLeavingActiveShowsOnTheWorkload(t *testing.T) {
	typed := func(phase computev1alpha.InstanceTypeLifecyclePhase) *computev1alpha.InstanceType {
		return &computev1alpha.InstanceType{
			ObjectMeta: metav1.ObjectMeta{Name: "datumcloud-d1-standard-2"},
			Spec: computev1alpha.InstanceTypeSpec{Lifecycle: computev1alpha.InstanceTypeLifecycle{
				Phase: phase, ReplacementInstanceType: "datumcloud-d1-standard-4"}},
		}
	}
	tests := map[string]struct {
		it          *computev1alpha.InstanceType
		wantType    string
		wantMessage string
	}{
		"an Active type adds nothing":   {it: typed(computev1alpha.InstanceTypePhaseActive)},
		"a type not in the catalog too": {},
		"a Deprecated type names the replacement": {it: typed(computev1alpha.InstanceTypePhaseDeprecated),
			wantType:    computev1alpha.InstanceTypeConditionDeprecated,
			wantMessage: "InstanceType 'datumcloud-d1-standard-2' is deprecated; please migrate to 'datumcloud-d1-standard-4'."},
		"a Disabled type names the replacement": {it: typed(computev1alpha.InstanceTypePhaseDisabled),
			wantType:    computev1alpha.InstanceTypeConditionDisabled,
			wantMessage: "InstanceType 'datumcloud-d1-standard-2' is disabled; please update your workload to 'datumcloud-d1-standard-4'."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := makeScenario("DFW").ready("DFW", 2).input()
			// The Workload reported the deprecation before: whatever the
			// type is now replaces it.
			in.Workload.Status.Conditions = append(in.Workload.Status.Conditions, metav1.Condition{
				Type: computev1alpha.InstanceTypeConditionDeprecated, Status: metav1.ConditionTrue, Reason: computev1alpha.InstanceTypeConditionDeprecated})
			in.InstanceType = tc.it
			st := Compute(in)
			var got []metav1.Condition
			for _, c := range st.Conditions {
				if c.Type == computev1alpha.InstanceTypeConditionDeprecated || c.Type == computev1alpha.InstanceTypeConditionDisabled {
					got = append(got, c)
				}
			}
			if tc.wantType == "" {
				if len(got) != 0 {
					t.Fatalf("conditions = %v, want none about the instance type", got)
				}
				return
			}
			if len(got) != 1 || got[0].Type != tc.wantType || got[0].Reason != tc.wantType || got[0].Status != metav1.ConditionTrue || got[0].Message != tc.wantMessage {
				t.Fatalf("conditions = %+v, want one %s: %q", got, tc.wantType, tc.wantMessage)
			}
			// Stable when fed back.
			in.Workload = in.Workload.DeepCopy()
			in.Workload.Status = st
			if diff := cmp.Diff(st, Compute(in)); diff != "" {
				t.Fatalf("an unchanged world changes the status (-first +second):\n%s", diff)
			}
		})
	}
}

func TestASuspendedCityIsSuspendedOnlyWhenItsCellConfirms(t *testing.T) {
	suspended := func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 0, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the deployment is suspended: all 2 instances stopped")
		wd.Status.Suspended = true
	}
	s := makeScenario("DFW", "LHR").blocked("LHR", computev1alpha.ReasonSuspended)
	s.reports["DFW"] = suspended
	st := Compute(s.input())
	dfw, lhr := st.Placements[0].Cities[0], st.Placements[0].Cities[1]
	if !dfw.Suspended || dfw.Reason != computev1alpha.ReasonSuspended {
		t.Errorf("DFW = %+v, want suspended (its cell confirmed)", dfw)
	}
	if lhr.Suspended || lhr.Reason != computev1alpha.ReasonSuspended {
		t.Errorf("LHR = %+v, want suspending (reason Suspended) but not suspended: its cell has not confirmed", lhr)
	}
	if c := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse || c.Reason != computev1alpha.ReasonSuspended {
		t.Errorf("Available = %+v, want False/Suspended", c)
	}

	s = makeScenario("DFW").unreachable("DFW", time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC))
	unreachable := s.reports["DFW"]
	s.reports["DFW"] = func(wd *computev1alpha.WorkloadDeployment) { unreachable(wd); wd.Status.Suspended = true }
	if city := Compute(s.input()).Placements[0].Cities[0]; city.Suspended {
		t.Errorf("an unreachable city claims suspended: %+v", city)
	}
}

// The verdicts are decided here, once: each city's state and the
// Workload's health, from what the cells report and the reason registry.
func TestCityStatesAndHealth(t *testing.T) {
	lastSeen := time.Date(2026, 11, 24, 11, 59, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		scenario *scenario
		suspend  bool
		states   map[string]computev1alpha.CityState
		health   computev1alpha.WorkloadHealth
	}{
		"every city ready is healthy": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).ready("LHR", 2),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateReady, "LHR": computev1alpha.CityStateReady},
			health:   computev1alpha.HealthHealthy,
		},
		"a city waiting for quota progresses": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).blocked("LHR", computev1alpha.ReasonPendingQuota),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateReady, "LHR": computev1alpha.CityStateProgressing},
			health:   computev1alpha.HealthProgressing,
		},
		"an image that cannot be pulled fails its city; others serve: degraded": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).blocked("LHR", computev1alpha.ReasonImageUnavailable),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateReady, "LHR": computev1alpha.CityStateFailed},
			health:   computev1alpha.HealthDegraded,
		},
		"a quota denial everywhere is failing": {
			scenario: makeScenario("DFW").blocked("DFW", computev1alpha.ReasonQuotaExceeded),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateFailed},
			health:   computev1alpha.HealthFailing,
		},
		"the quota backend down is waited out, never failed": {
			scenario: makeScenario("DFW").blocked("DFW", computev1alpha.ReasonQuotaBackendUnavailable),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateProgressing},
			health:   computev1alpha.HealthProgressing,
		},
		"an unreachable city with others serving is degraded": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).unreachable("LHR", lastSeen),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateReady, "LHR": computev1alpha.CityStateUnreachable},
			health:   computev1alpha.HealthDegraded,
		},
		"only unreachable cities: unknown": {
			scenario: makeScenario("LHR").unreachable("LHR", lastSeen),
			states:   map[string]computev1alpha.CityState{"LHR": computev1alpha.CityStateUnreachable},
			health:   computev1alpha.HealthUnknown,
		},
		"an unbound city fails": {
			scenario: makeScenario("DFW", "XYZ").unbound("XYZ").ready("DFW", 2),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateReady, "XYZ": computev1alpha.CityStateFailed},
			health:   computev1alpha.HealthDegraded,
		},
		"a deployment not created yet progresses": {
			scenario: makeScenario("DFW").notCreated("DFW"),
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateProgressing},
			health:   computev1alpha.HealthProgressing,
		},
		"suspended: a city suspends until its cell confirms": {
			scenario: makeScenario("DFW", "LHR").ready("DFW", 2).ready("LHR", 2),
			suspend:  true,
			states:   map[string]computev1alpha.CityState{"DFW": computev1alpha.CityStateSuspending, "LHR": computev1alpha.CityStateSuspending},
			health:   computev1alpha.HealthSuspending,
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := tc.scenario.input()
			if tc.suspend {
				in.Workload.Annotations = map[string]string{computev1alpha.SuspendedAnnotation: computev1alpha.SuspendedAnnotationValue}
			}
			out := Compute(in)
			got := map[string]computev1alpha.CityState{}
			for _, c := range out.Placements[0].Cities {
				got[c.CityCode] = c.State
				if c.State == computev1alpha.CityStateFailed && !st.Terminal(c.Reason) {
					t.Errorf("%s failed for %s, which the registry does not call terminal", c.CityCode, c.Reason)
				}
			}
			if diff := cmp.Diff(tc.states, got); diff != "" || out.Health != tc.health {
				t.Errorf("states (-want +got):\n%s\nhealth %s, want %s", diff, out.Health, tc.health)
			}
		})
	}
}

// The cell's notReady names the city's worst Instances: the city shows
// that reason, with the Instance named.
func TestACityShowsTheWorstInstanceItsCellNames(t *testing.T) {
	s := makeScenario("DFW")
	s.reports["DFW"] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 1, metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "1 of 2 ready")
		wd.Status.NotReady = &computev1alpha.InstanceBlockers{Reason: computev1alpha.ReasonPendingQuota, Message: "waiting for the claim",
			Count: 1, Instances: []string{"web-dfw-1"}}
	}
	st := Compute(s.input())
	c := st.Placements[0].Cities[0]
	if c.State != computev1alpha.CityStateProgressing || c.Reason != computev1alpha.ReasonPendingQuota ||
		c.Message != "instance web-dfw-1: waiting for the claim" || c.NotReady == nil || c.ReplicasReady {
		t.Errorf("city = %s %s %q notReady=%v replicasReady=%t", c.State, c.Reason, c.Message, c.NotReady, c.ReplicasReady)
	}
}
