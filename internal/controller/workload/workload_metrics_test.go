package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cityrollout"
)

func TestTimingsOf(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	// Two waves: DFW (wave 1) got the target 10 minutes ago, LHR and SIN
	// (wave 2) 4 and 3 minutes ago.
	plan := cityrollout.Schedule{
		Waves:  [][]string{{"p/DFW"}, {"p/LHR", "p/SIN"}},
		Cities: []cityrollout.CityPlan{{Key: "p/DFW", Wave: 1}, {Key: "p/LHR", Wave: 2}, {Key: "p/SIN", Wave: 2}},
	}
	cities := []cityrollout.City{
		{Key: "p/DFW", Revision: "new", AppliedAt: ago(10 * time.Minute)},
		{Key: "p/LHR", Revision: "new", AppliedAt: ago(4 * time.Minute)},
		{Key: "p/SIN", Revision: "new", AppliedAt: ago(3 * time.Minute)},
	}
	status := func(hash string, phase computev1alpha.RolloutPhase, wave int32) *computev1alpha.WorkloadRolloutStatus {
		return &computev1alpha.WorkloadRolloutStatus{TemplateHash: hash, Phase: phase, Wave: wave, Waves: 2}
	}
	tests := map[string]struct {
		prev, next *computev1alpha.WorkloadRolloutStatus
		cities     []cityrollout.City
		want       rolloutTimings
	}{
		"the first wave finishing shows its duration": {
			prev: status("new", computev1alpha.RolloutPhaseProgressing, 1),
			next: status("new", computev1alpha.RolloutPhaseProgressing, 2),
			want: rolloutTimings{waves: []time.Duration{10 * time.Minute}},
		},
		"the last wave finishing completes the rollout": {
			prev: status("new", computev1alpha.RolloutPhaseProgressing, 2),
			next: status("new", computev1alpha.RolloutPhaseComplete, 0),
			want: rolloutTimings{ended: true, result: computev1alpha.RolloutPhaseComplete, rollout: 10 * time.Minute,
				waves: []time.Duration{4 * time.Minute}},
		},
		"every wave finishing in one pass shows each": {
			prev: status("new", computev1alpha.RolloutPhaseProgressing, 1),
			next: status("new", computev1alpha.RolloutPhaseComplete, 0),
			want: rolloutTimings{ended: true, result: computev1alpha.RolloutPhaseComplete, rollout: 10 * time.Minute,
				waves: []time.Duration{10 * time.Minute, 4 * time.Minute}},
		},
		"a halt ends the rollout and finishes no wave": {
			prev: status("new", computev1alpha.RolloutPhaseProgressing, 2),
			next: status("new", computev1alpha.RolloutPhaseHalted, 2),
			want: rolloutTimings{ended: true, result: computev1alpha.RolloutPhaseHalted, rollout: 10 * time.Minute},
		},
		"an approval given without a wave finishing shows nothing": {
			prev: status("new", computev1alpha.RolloutPhaseAwaitingApproval, 2),
			next: status("new", computev1alpha.RolloutPhaseProgressing, 2),
		},
		"a new revision starts a new rollout: nothing ended": {
			prev: status("old", computev1alpha.RolloutPhaseProgressing, 1),
			next: status("new", computev1alpha.RolloutPhaseComplete, 0),
		},
		"a rollout already complete is not observed again": {
			prev: status("new", computev1alpha.RolloutPhaseComplete, 0),
			next: status("new", computev1alpha.RolloutPhaseComplete, 0),
		},
		"a Workload's first status shows nothing": {
			next: status("new", computev1alpha.RolloutPhaseComplete, 0),
		},
		"cities without a recorded start show nothing": {
			prev:   status("new", computev1alpha.RolloutPhaseProgressing, 2),
			next:   status("new", computev1alpha.RolloutPhaseComplete, 0),
			cities: []cityrollout.City{{Key: "p/DFW", Revision: "new"}, {Key: "p/LHR", Revision: "new"}, {Key: "p/SIN", Revision: "new"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs := cities
			if tc.cities != nil {
				cs = tc.cities
			}
			got := timingsOf(tc.prev, tc.next, plan, cs, now)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(rolloutTimings{})); diff != "" {
				t.Errorf("timingsOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPhaseCountsFollowEachWorkload(t *testing.T) {
	var p phaseCounts
	key := func(cluster, name string) workloadKey {
		return workloadKey{cluster: cluster, NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	count := func(phase computev1alpha.RolloutPhase) float64 {
		return testutil.ToFloat64(rollouts.WithLabelValues(string(phase)))
	}
	p.set(key("a", "web"), computev1alpha.RolloutPhaseProgressing)
	p.set(key("b", "web"), computev1alpha.RolloutPhaseProgressing)
	p.set(key("a", "api"), computev1alpha.RolloutPhaseHalted)
	if got := []float64{count(computev1alpha.RolloutPhaseProgressing), count(computev1alpha.RolloutPhaseHalted)}; !cmp.Equal(got, []float64{2, 1}) {
		t.Errorf("progressing, halted = %v, want [2 1] (same name in two project clusters counts twice)", got)
	}
	p.set(key("a", "web"), computev1alpha.RolloutPhaseComplete)
	p.set(key("a", "api"), "")
	got := []float64{count(computev1alpha.RolloutPhaseProgressing), count(computev1alpha.RolloutPhaseHalted), count(computev1alpha.RolloutPhaseComplete)}
	if !cmp.Equal(got, []float64{1, 0, 1}) {
		t.Errorf("progressing, halted, complete = %v, want [1 0 1] after a completion and a deletion", got)
	}
}
