package workload

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cityrollout"
	"github.com/citycells/compute/internal/lazymetrics"
)

// Rollout metrics, part of compute's operational contract.
const (
	// RolloutDurationMetric observes each rollout across cities that ends:
	// the seconds from the first city getting the revision to every city
	// running it (result Complete) or the rollout halting (result Halted),
	// by strategy. Pauses and approval waits are part of it.
	RolloutDurationMetric = "compute_rollout_duration_seconds"
	// WaveDurationMetric observes each wave of a rollout that finishes: the
	// seconds from the first city of the wave getting the revision to every
	// city of the wave having soaked at it, by strategy.
	WaveDurationMetric = "compute_rollout_wave_duration_seconds"
	// RolloutsMetric is the number of Workloads whose rollout is in each
	// phase (Progressing, Paused, AwaitingApproval, Halted, Complete).
	RolloutsMetric = "compute_rollouts"
)

var (
	durationBuckets = []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}
	rolloutDuration = lazymetrics.HistogramVec(RolloutDurationMetric,
		"Seconds from a rollout's first city getting the revision to the rollout completing or halting, by strategy and result.",
		durationBuckets, "strategy", "result")
	waveDuration = lazymetrics.HistogramVec(WaveDurationMetric,
		"Seconds from a wave's first city getting the revision to every city of the wave having soaked at it, by strategy.",
		durationBuckets, "strategy")
	rollouts = lazymetrics.GaugeVec(RolloutsMetric,
		"Workloads whose rollout across cities is in each phase.",
		"phase")
)

// rolloutPhaseValues are the phases compute_rollouts always reports.
var rolloutPhaseValues = []computev1alpha.RolloutPhase{
	computev1alpha.RolloutPhaseProgressing, computev1alpha.RolloutPhasePaused, computev1alpha.RolloutPhaseAwaitingApproval,
	computev1alpha.RolloutPhaseHalted, computev1alpha.RolloutPhaseComplete,
}

// registerMetrics registers the controller's metrics on controller-runtime's
// registry, once: binaries without the management role expose none.
var registerMetrics = lazymetrics.NewSet(zeroRolloutSeries, rolloutDuration, waveDuration, rollouts).Register

// zeroRolloutSeries creates every series at the start, so rate() and the
// alerts see zero rather than nothing.
func zeroRolloutSeries() {
	for _, p := range rolloutPhaseValues {
		rollouts.WithLabelValues(string(p))
	}
	for _, st := range []computev1alpha.CityRolloutStrategyType{
		computev1alpha.AllAtOnceCityRollout, computev1alpha.WavesCityRollout, computev1alpha.CanaryCityRollout,
	} {
		waveDuration.WithLabelValues(string(st))
		for _, result := range []computev1alpha.RolloutPhase{computev1alpha.RolloutPhaseComplete, computev1alpha.RolloutPhaseHalted} {
			rolloutDuration.WithLabelValues(string(st), string(result))
		}
	}
}

// workloadKey names a Workload across project clusters.
type workloadKey struct {
	cluster string
	types.NamespacedName
}

// phaseCounts keeps the rollout phase of every Workload the controller
// wrote a status for, and exports the count per phase. A Workload that is
// gone (or deleted) is forgotten; after a restart each Workload's first
// reconcile (the initial list) brings the counts back.
type phaseCounts struct {
	mu     sync.Mutex
	phases map[workloadKey]computev1alpha.RolloutPhase
}

// set records k's phase; an empty phase forgets k.
func (p *phaseCounts) set(k workloadKey, phase computev1alpha.RolloutPhase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phases == nil {
		p.phases = map[workloadKey]computev1alpha.RolloutPhase{}
	}
	if prev, ok := p.phases[k]; ok && prev == phase || !ok && phase == "" {
		return
	}
	if phase == "" {
		delete(p.phases, k)
	} else {
		p.phases[k] = phase
	}
	counts := map[computev1alpha.RolloutPhase]int{}
	for _, ph := range p.phases {
		counts[ph]++
	}
	for _, ph := range rolloutPhaseValues {
		rollouts.WithLabelValues(string(ph)).Set(float64(counts[ph]))
	}
}

// rolloutTimings are the durations a status write reveals.
type rolloutTimings struct {
	// ended is set when the rollout completed or halted, result saying
	// which, after rollout.
	ended   bool
	result  computev1alpha.RolloutPhase
	rollout time.Duration
	// waves are the durations of the waves that finished.
	waves []time.Duration
}

// timingsOf returns what changed between the rollout status prev (as
// stored) and next (just written) for the plan made on cities: a rollout of
// the same revision that ended, the waves that finished. Times run from
// each city's AppliedAt (revision-applied-at); a rollout without a recorded
// start, or one that started and ended between two writes of the same
// revision, shows nothing.
func timingsOf(prev, next *computev1alpha.WorkloadRolloutStatus, plan cityrollout.Schedule, cities []cityrollout.City, now time.Time) rolloutTimings {
	var out rolloutTimings
	if prev == nil || next == nil || prev.TemplateHash == "" || prev.TemplateHash != next.TemplateHash || finished(prev.Phase) {
		return out
	}
	target := next.TemplateHash
	// start returns when the first city of wave (0: any) got the target.
	start := func(wave int) time.Time {
		var first time.Time
		for i, c := range cities {
			if i >= len(plan.Cities) || c.Revision != target || c.AppliedAt.IsZero() || wave > 0 && plan.Cities[i].Wave != wave {
				continue
			}
			if first.IsZero() || c.AppliedAt.Before(first) {
				first = c.AppliedAt
			}
		}
		return first
	}
	if finished(next.Phase) {
		if at := start(0); !at.IsZero() {
			out.ended, out.result, out.rollout = true, next.Phase, max(now.Sub(at), 0)
		}
	}
	end := int(next.Wave) // the first wave not finished
	switch next.Phase {
	case computev1alpha.RolloutPhaseComplete:
		end = len(plan.Waves) + 1
	case computev1alpha.RolloutPhaseHalted:
		end = 0
	}
	for w := max(int(prev.Wave), 1); w < end; w++ {
		if at := start(w); !at.IsZero() {
			out.waves = append(out.waves, max(now.Sub(at), 0))
		}
	}
	return out
}

// finished reports a phase a rollout does not leave without a new revision.
func finished(p computev1alpha.RolloutPhase) bool {
	return p == computev1alpha.RolloutPhaseComplete || p == computev1alpha.RolloutPhaseHalted
}

// observe exports t under strategy.
func (t rolloutTimings) observe(strategy computev1alpha.CityRolloutStrategyType) {
	if t.ended {
		rolloutDuration.WithLabelValues(string(strategy), string(t.result)).Observe(t.rollout.Seconds())
	}
	for _, d := range t.waves {
		waveDuration.WithLabelValues(string(strategy)).Observe(d.Seconds())
	}
}
