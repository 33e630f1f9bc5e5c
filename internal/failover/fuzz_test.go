package failover

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/placement"
)

// FuzzFailoverKeepsItsPromises drives a Workload through random partitions,
// heals, refusals, rate holds and clock steps, applying every plan as the
// controller does, and checks after each step what failover promises:
// nothing of the placement's own deployments is touched; a fallback starts
// only past the toleration of a Location unreachable, stands in for
// exactly one Location, and never drains while that Location is
// unreachable or not back in full for the hold-down; at most
// maxFailedOverLocations are failed over at once.
func FuzzFailoverKeepsItsPromises(f *testing.F) {
	f.Add([]byte{0, 1, 7, 7, 7, 7, 2, 7, 7, 7, 7, 7, 7})
	f.Add([]byte{1, 7, 7, 7, 4, 7, 7, 5, 7, 3, 7, 7, 7, 7, 7, 7, 7})
	f.Add([]byte{0, 1, 7, 7, 7, 7, 7, 6, 8, 7, 7, 7, 2, 3, 7, 7, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 200 {
			steps = steps[:200]
		}
		wd := newWorld()
		if len(steps) > 0 && steps[0]%2 == 1 {
			wd.w.Spec.Placements[0].Failover.MaxFailedOverLocations = ptr.To[int32](2)
		}
		spec := SpecOf(&wd.w.Spec.Placements[0])
		now := t0
		hold := false
		for _, s := range steps {
			switch s % 9 {
			case 0, 1: // DFW or LHR goes dark (again: the count restarts)
				setDark(wd.city([]string{"DFW", "LHR"}[s%9]), now)
			case 2, 3: // DFW or LHR returns in full
				setAvailable(wd.city([]string{"DFW", "LHR"}[s%9-2]))
			case 4: // SIN's cell goes dark: its fallbacks go stale
				wd.unreachable["SIN"] = true
				for i := range wd.deployments {
					if d := &wd.deployments[i]; placement.IsFallback(d) && d.Spec.CityCode == "SIN" && d.Status.LastSeenTime == nil {
						setDark(d, now)
					}
				}
			case 5: // SIN heals
				delete(wd.unreachable, "SIN")
				for i := range wd.deployments {
					if d := &wd.deployments[i]; placement.IsFallback(d) && d.Spec.CityCode == "SIN" {
						setAvailable(d)
						d.Status.ObservedGeneration = 1
					}
				}
			case 6: // every fallback is refused by quota
				for i := range wd.deployments {
					if d := &wd.deployments[i]; placement.IsFallback(d) && d.Status.LastSeenTime == nil {
						d.Status.ObservedGeneration = 1
						meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable,
							Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonQuotaExceeded})
					}
				}
			case 7:
				now = now.Add(time.Duration(5+int(s)%40) * time.Second)
			case 8:
				hold = !hold
			}
			before := map[string]computev1alpha.WorkloadDeployment{}
			for _, d := range wd.deployments {
				before[d.Name] = d
			}
			p := wd.plan(now)
			if hold {
				p.Hold("held", time.Second)
			}
			check(t, wd, spec, before, p, now)
			wd.apply(p, now)
			checkApplied(t, wd, spec)
		}
	})
}

func check(t *testing.T, wd *world, spec *Spec, before map[string]computev1alpha.WorkloadDeployment, p Outcome, now time.Time) {
	t.Helper()
	for _, d := range p.Decisions {
		src := before[d.Target.Name]
		since, dark := UnreachableSince(&src)
		if d.Start && d.Previous == nil && (!dark || now.Before(since.Add(spec.Toleration))) {
			t.Fatalf("%s failed over at %v, unreachable %v since %v (toleration %v)", d.Target.Name, now, dark, since, spec.Toleration)
		}
		if d.Drain != nil && (dark || !Returned(&src)) {
			t.Fatalf("%s's fallback drained while it is unreachable or not back in full", d.Target.Name)
		}
		if d.Drain != nil {
			back, err := time.Parse(time.RFC3339, d.Drain.Annotations[computev1alpha.FailoverReturningSinceAnnotation])
			if err != nil || now.Before(back.Add(spec.ReturnAfter)) {
				t.Fatalf("%s's fallback drained at %v, back since %q (hold-down %v)", d.Target.Name, now, d.Drain.Annotations[computev1alpha.FailoverReturningSinceAnnotation], spec.ReturnAfter)
			}
		}
		if fb := d.Fallback; fb != nil {
			if _, own := before[fb.Name]; own && !placement.IsFallback(ptr.To(before[fb.Name])) {
				t.Fatalf("a fallback takes the name of the placement's own deployment %s", fb.Name)
			}
			if fb.FailoverFor == nil || fb.FailoverFor.Name != d.Target.Name {
				t.Fatalf("fallback %s does not stand in for %s", fb.Name, d.Target.Name)
			}
		}
	}
	// A fallback of an unreachable Location that nobody refused stays.
	kept := map[string]bool{}
	for _, fb := range p.Fallbacks() {
		kept[fb.FailoverFor.Name] = true
	}
	for _, d := range before {
		if !placement.IsFallback(&d) {
			continue
		}
		src := before[d.Labels[computev1alpha.FailoverForLabel]]
		if _, dark := UnreachableSince(&src); dark && !kept[src.Name] {
			t.Fatalf("the fallback of %s was dropped while it is unreachable", src.Name)
		}
	}
}

func checkApplied(t *testing.T, wd *world, spec *Spec) {
	t.Helper()
	per := map[string]int{}
	for _, d := range wd.fallbacks() {
		per[d.Labels[computev1alpha.FailoverForLabel]]++
	}
	for src, n := range per {
		if n != 1 {
			t.Fatalf("%d fallbacks stand in for %s", n, src)
		}
		if wd.city("DFW").Name != src && wd.city("LHR").Name != src {
			t.Fatalf("a fallback stands in for %s, not a deployment of the placement", src)
		}
	}
	if len(per) > spec.MaxLocations {
		t.Fatalf("%d Locations failed over, limit %d", len(per), spec.MaxLocations)
	}
	if wd.city("DFW") == nil || wd.city("LHR") == nil {
		t.Fatal("a deployment of the placement is gone")
	}
}
