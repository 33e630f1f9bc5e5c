package failover

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/placement"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 3, 0, time.UTC)

// world is a Workload running 2 replicas in DFW and LHR with failover to
// SIN then NRT, and its deployments.
type world struct {
	w           *computev1alpha.Workload
	cities      locations.Cities
	deployments []computev1alpha.WorkloadDeployment
	unreachable map[string]bool
}

func newWorld() *world {
	w := &computev1alpha.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: computev1alpha.WorkloadSpec{Placements: []computev1alpha.WorkloadPlacement{{
			Name:             "edge",
			LocationSelector: placement.CityCodesSelector([]string{"DFW", "LHR"}),
			ScaleSettings:    computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
			Failover: &computev1alpha.PlacementFailover{
				Fallbacks:          []computev1alpha.PlacementLocation{{Name: "sin"}, {Name: "nrt"}},
				TolerationSeconds:  ptr.To[int32](60),
				ReturnAfterSeconds: ptr.To[int32](30),
			},
		}}},
	}
	wd := &world{w: w, cities: locations.ReadyCities("locs", "DFW", "LHR", "SIN", "NRT"), unreachable: map[string]bool{}}
	for _, t := range placement.Expand(w, placement.Targets(w, wd.cities, nil), nil) {
		d := t.Desired.DeepCopy()
		d.Generation = 1
		d.Status.ObservedGeneration = 1
		setAvailable(d)
		wd.deployments = append(wd.deployments, *d)
	}
	return wd
}

func setAvailable(d *computev1alpha.WorkloadDeployment) {
	d.Status.LastSeenTime = nil
	d.Status.ReplicaCounts = computev1alpha.ReplicaCounts{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, DesiredReplicas: 2}
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue,
		Reason: computev1alpha.ReasonAvailable, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))})
}

func setDark(d *computev1alpha.WorkloadDeployment, since time.Time) {
	d.Status.LastSeenTime = &metav1.Time{Time: since.Add(-4 * time.Second)}
	meta.RemoveStatusCondition(&d.Status.Conditions, computev1alpha.ConditionAvailable)
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: computev1alpha.ReasonCellUnreachable, LastTransitionTime: metav1.NewTime(since)})
}

func (wd *world) city(code string) *computev1alpha.WorkloadDeployment {
	for i := range wd.deployments {
		if wd.deployments[i].Spec.CityCode == code && !placement.IsFallback(&wd.deployments[i]) {
			return &wd.deployments[i]
		}
	}
	return nil
}

func (wd *world) plan(now time.Time) Outcome {
	return Make(Input{
		Workload: wd.w, Targets: placement.Targets(wd.w, wd.cities, wd.deployments), Deployments: wd.deployments,
		Cities: wd.cities, Reachable: func(c string) bool { return !wd.unreachable[c] }, Now: now,
	})
}

// apply creates the plan's new fallbacks and deletes the fallbacks it no
// longer keeps, as the Workload controller's Diff does.
func (wd *world) apply(p Outcome, created time.Time) {
	keep := map[string]bool{}
	for _, fb := range placement.Expand(wd.w, p.Fallbacks(), nil) {
		keep[fb.Name] = true
		found := false
		for i := range wd.deployments {
			if wd.deployments[i].Name == fb.Name {
				found = true
			}
		}
		if !found {
			d := fb.Desired.DeepCopy()
			d.Generation = 1
			d.CreationTimestamp = metav1.NewTime(created)
			wd.deployments = append(wd.deployments, *d)
		}
	}
	for _, d := range p.Decisions {
		if d.Fallback == nil {
			continue
		}
		for i := range wd.deployments {
			if wd.deployments[i].Name == d.Fallback.Name && (d.ReturningSince != "" || wd.deployments[i].Annotations[computev1alpha.FailoverReturningSinceAnnotation] != "") {
				if wd.deployments[i].Annotations == nil {
					wd.deployments[i].Annotations = map[string]string{}
				}
				wd.deployments[i].Annotations[computev1alpha.FailoverReturningSinceAnnotation] = d.ReturningSince
			}
		}
	}
	out := wd.deployments[:0]
	for _, d := range wd.deployments {
		if placement.IsFallback(&d) && !keep[d.Name] {
			continue
		}
		out = append(out, d)
	}
	wd.deployments = out
}

func (wd *world) fallbacks() []computev1alpha.WorkloadDeployment {
	var out []computev1alpha.WorkloadDeployment
	for _, d := range wd.deployments {
		if placement.IsFallback(&d) {
			out = append(out, d)
		}
	}
	return out
}

func onlyDecision(t *testing.T, p Outcome) Decision {
	t.Helper()
	if len(p.Decisions) != 1 {
		t.Fatalf("want one decision, got %d: %+v", len(p.Decisions), p.Decisions)
	}
	return p.Decisions[0]
}

func TestReachableLocationsNeedNoDecision(t *testing.T) {
	p := newWorld().plan(t0)
	if len(p.Decisions) != 0 || p.RequeueAfter != 0 {
		t.Fatalf("want nothing, got %+v", p)
	}
}

func TestALocationUnreachableWithinItsTolerationWaits(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	p := wd.plan(t0.Add(20 * time.Second))
	d := onlyDecision(t, p)
	if d.Status.Phase != computev1alpha.FailoverTolerating || d.Fallback != nil || d.Start {
		t.Fatalf("want Tolerating without a fallback, got %+v", d)
	}
	if !d.Status.FailoverAt.Time.Equal(t0.Add(time.Minute)) || p.RequeueAfter != 40*time.Second {
		t.Fatalf("failoverAt %v, requeue %v; want %v and 40s", d.Status.FailoverAt, p.RequeueAfter, t0.Add(time.Minute))
	}
	if !strings.Contains(d.Status.Message, "edge/LHR unreachable since 12:00:03; its replicas fail over at 12:01:03") {
		t.Fatalf("message: %s", d.Status.Message)
	}
}

func TestPastItsTolerationALocationFailsOverToTheFirstFallbackThatCanTakeIt(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	wd.unreachable["SIN"] = true
	d := onlyDecision(t, wd.plan(t0.Add(time.Minute)))
	if !d.Start || d.Fallback == nil || d.Fallback.CityCode != "NRT" || d.Status.Phase != computev1alpha.FailoverFailedOver {
		t.Fatalf("want a start in NRT (SIN's cell is unreachable), got %+v", d)
	}
	if d.Fallback.FailoverFor == nil || d.Fallback.FailoverFor.Name != wd.city("LHR").Name {
		t.Fatalf("the fallback must stand in for LHR's deployment: %+v", d.Fallback.FailoverFor)
	}
	if d.Status.Replicas != 2 || !strings.Contains(d.Status.Message, "2 replica(s) failed over to edge/NRT (failover for LHR) at 12:01:03") {
		t.Fatalf("status: %+v", d.Status)
	}
	fb := placement.Expand(wd.w, []placement.Target{*d.Fallback}, nil)[0].Desired
	if fb.Labels[computev1alpha.FailoverForLabel] != wd.city("LHR").Name || fb.Spec.CityCode != "NRT" || fb.Spec.PlacementName != "edge" {
		t.Fatalf("fallback deployment: %+v", fb.ObjectMeta)
	}
}

func TestNoFallbackThatCanTakeTheReplicasLeavesThemPendingWithWhy(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	wd.unreachable["SIN"] = true
	delete(wd.cities, "NRT")
	p := wd.plan(t0.Add(2 * time.Minute))
	d := onlyDecision(t, p)
	if d.Status.Phase != computev1alpha.FailoverPending || d.Fallback != nil || p.RequeueAfter != PendingPoll {
		t.Fatalf("want Pending, got %+v", d)
	}
	for _, want := range []string{"sin (its cell is unreachable)", "nrt (not bound to the project)"} {
		if !strings.Contains(d.Status.Message, want) {
			t.Errorf("message %q lacks %q", d.Status.Message, want)
		}
	}
}

func TestAPlacementsOwnLocationIsAFallbackOnlyWhenAllowed(t *testing.T) {
	wd := newWorld()
	wd.w.Spec.Placements[0].Failover.Fallbacks = []computev1alpha.PlacementLocation{{Name: "dfw"}}
	setDark(wd.city("LHR"), t0)
	if d := onlyDecision(t, wd.plan(t0.Add(time.Minute))); d.Fallback != nil || !strings.Contains(d.Status.Message, "allowPlacementLocations") {
		t.Fatalf("want no fallback, got %+v", d)
	}
	wd.w.Spec.Placements[0].Failover.AllowPlacementLocations = true
	d := onlyDecision(t, wd.plan(t0.Add(time.Minute)))
	if d.Fallback == nil || d.Fallback.CityCode != "DFW" || d.Fallback.Name == wd.city("DFW").Name {
		t.Fatalf("want a fallback of its own in DFW, got %+v", d.Fallback)
	}
	if d.Fallback.Key() == placement.KeyOf("edge", "DFW", d.Fallback.Location) {
		t.Fatalf("a fallback's key must differ from the placement's own target there: %s", d.Fallback.Key())
	}
}

func TestTheWorkloadsLimitOfFailedOverLocationsHoldsTheNext(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	setDark(wd.city("DFW"), t0)
	p := wd.plan(t0.Add(time.Minute))
	if p.Starts() != 1 {
		t.Fatalf("want one start, got %+v", p.Decisions)
	}
	wd.apply(p, t0.Add(time.Minute))
	p = wd.plan(t0.Add(2 * time.Minute))
	phases := map[string]computev1alpha.FailoverPhase{}
	for _, d := range p.Decisions {
		phases[d.Target.CityCode] = d.Status.Phase
	}
	if phases["DFW"] != computev1alpha.FailoverFailedOver || phases["LHR"] != computev1alpha.FailoverPending || p.Starts() != 0 {
		t.Fatalf("want DFW failed over and LHR pending (maxFailedOverLocations 1), got %v", phases)
	}
	wd.w.Spec.Placements[0].Failover.MaxFailedOverLocations = ptr.To[int32](2)
	if p := wd.plan(t0.Add(2 * time.Minute)); p.Starts() != 1 {
		t.Fatalf("with a limit of 2 LHR fails over too: %+v", p.Decisions)
	}
}

func TestAFlappingCityNeverFailsOver(t *testing.T) {
	wd := newWorld()
	now := t0
	for range 3 {
		setDark(wd.city("LHR"), now)
		now = now.Add(50 * time.Second)
		if p := wd.plan(now); p.Starts() != 0 {
			t.Fatalf("failed over inside the toleration: %+v", p.Decisions)
		}
		setAvailable(wd.city("LHR"))
		now = now.Add(10 * time.Second)
		if p := wd.plan(now); len(p.Decisions) != 0 {
			t.Fatalf("a reachable city needs no decision: %+v", p.Decisions)
		}
	}
}

func TestTheFallbackDrainsOnlyAfterTheLocationIsBackInFullForTheHoldDown(t *testing.T) {
	wd := newWorld()
	lhr := wd.city("LHR")
	setDark(lhr, t0)
	wd.apply(wd.plan(t0.Add(time.Minute)), t0.Add(time.Minute))
	if len(wd.fallbacks()) != 1 {
		t.Fatalf("want one fallback, got %d", len(wd.fallbacks()))
	}

	t.Log("back, but not every replica updated: the fallback stays")
	setAvailable(wd.city("LHR"))
	wd.city("LHR").Status.UpdatedReplicas = 1
	d := onlyDecision(t, wd.plan(t0.Add(3*time.Minute)))
	if d.Fallback == nil || d.Status.Phase != computev1alpha.FailoverFailedOver || d.ReturningSince != "" {
		t.Fatalf("want the fallback kept, got %+v", d)
	}

	t.Log("back in full: Returning, the fallback marked")
	setAvailable(wd.city("LHR"))
	back := t0.Add(4 * time.Minute)
	p := wd.plan(back)
	d = onlyDecision(t, p)
	if d.Status.Phase != computev1alpha.FailoverReturning || d.Fallback == nil || p.RequeueAfter != 30*time.Second {
		t.Fatalf("want Returning for 30s, got %+v (requeue %v)", d, p.RequeueAfter)
	}
	wd.apply(p, back)

	t.Log("dark again inside the hold-down: the return starts over")
	setDark(wd.city("LHR"), back.Add(10*time.Second))
	d = onlyDecision(t, wd.plan(back.Add(20*time.Second)))
	if d.Fallback == nil || d.ReturningSince != "" || d.Start || d.Status.Phase != computev1alpha.FailoverFailedOver {
		t.Fatalf("want the fallback kept, unmarked, without a new start; got %+v", d)
	}
	p = wd.plan(back.Add(20 * time.Second))
	wd.apply(p, back)
	if got := wd.fallbacks()[0].Annotations[computev1alpha.FailoverReturningSinceAnnotation]; got != "" {
		t.Fatalf("returning-since must be cleared, is %q", got)
	}

	t.Log("back for the whole hold-down: the fallback drains")
	setAvailable(wd.city("LHR"))
	again := back.Add(time.Minute)
	wd.apply(wd.plan(again), again)
	if d := onlyDecision(t, wd.plan(again.Add(29*time.Second))); d.Drain != nil {
		t.Fatal("drained before the hold-down ended")
	}
	d = onlyDecision(t, wd.plan(again.Add(30*time.Second)))
	if d.Drain == nil || d.Fallback != nil {
		t.Fatalf("want the fallback drained, got %+v", d)
	}
	wd.apply(wd.plan(again.Add(30*time.Second)), again)
	if len(wd.fallbacks()) != 0 {
		t.Fatal("the fallback is still there")
	}
}

func TestARefusingFallbackHandsTheReplicasToTheNext(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	wd.apply(wd.plan(t0.Add(time.Minute)), t0.Add(time.Minute))
	fb := &wd.deployments[len(wd.deployments)-1]
	fb.Status.ObservedGeneration = 1
	meta.SetStatusCondition(&fb.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionFalse,
		Reason: computev1alpha.ReasonQuotaExceeded})
	refused := *fb.Status.DeepCopy()
	d := onlyDecision(t, wd.plan(t0.Add(2*time.Minute)))
	if !d.Start || d.Previous == nil || d.Previous.CityCode != "SIN" || d.Fallback.CityCode != "NRT" {
		t.Fatalf("want a move from SIN to NRT, got %+v", d)
	}
	if !strings.Contains(d.Status.Message, "moved from edge/SIN (failover for LHR), which refuses them: QuotaExceeded") {
		t.Fatalf("message: %s", d.Status.Message)
	}

	t.Log("held by the rate, the move keeps SIN")
	p := wd.plan(t0.Add(2 * time.Minute))
	p.Hold("waiting for the rate", 2*time.Second)
	if d := onlyDecision(t, p); d.Start || d.Fallback.CityCode != "SIN" {
		t.Fatalf("a held move keeps its fallback: %+v", d)
	}

	t.Log("NRT refuses too: the last fallback is kept and retried")
	wd.apply(wd.plan(t0.Add(2*time.Minute)), t0.Add(2*time.Minute))
	if n := len(wd.fallbacks()); n != 1 || wd.fallbacks()[0].Spec.CityCode != "NRT" {
		t.Fatalf("want only NRT's fallback, got %d", n)
	}
	for i := range wd.deployments {
		if placement.IsFallback(&wd.deployments[i]) {
			wd.deployments[i].Status = *refused.DeepCopy()
		}
	}
	p = wd.plan(t0.Add(3 * time.Minute))
	d = onlyDecision(t, p)
	if d.Start || d.Fallback == nil || d.Fallback.CityCode != "NRT" || !strings.Contains(d.Status.Message, "keeps them and retries") {
		t.Fatalf("want NRT kept, got %+v", d)
	}
}

func TestAHeldFirstFailoverIsPendingWithWhy(t *testing.T) {
	wd := newWorld()
	setDark(wd.city("LHR"), t0)
	p := wd.plan(t0.Add(time.Minute))
	p.Hold("waiting for the platform's failover rate", 2*time.Second)
	d := onlyDecision(t, p)
	if d.Start || d.Fallback != nil || d.Status.Phase != computev1alpha.FailoverPending || p.RequeueAfter != 2*time.Second {
		t.Fatalf("want Pending, requeued in 2s: %+v", p)
	}
	if len(p.Fallbacks()) != 0 || !strings.Contains(d.Status.Message, "failover rate") {
		t.Fatalf("fallbacks %v, message %q", p.Fallbacks(), d.Status.Message)
	}
}
