package cityrollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

var t0 = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

// Revisions in the tests.
const (
	revA = "aaaa" // old
	revB = "bbbb" // intermediate
	revC = "cccc" // target
)

// cityBuilder builds an observed city.
type cityBuilder struct{ City }

func city(code string) *cityBuilder {
	return &cityBuilder{City{Key: "edge/" + code, Code: code}}
}

// at: the city runs rev, got it at applied and is ready since then.
func (b *cityBuilder) ready(rev string, since time.Time) *cityBuilder {
	b.Revision, b.AppliedAt, b.Ready, b.ReadySince = rev, since, true, since
	return b
}

// updating: the city got rev at applied and is not ready yet.
func (b *cityBuilder) updating(rev string, applied time.Time) *cityBuilder {
	b.Revision, b.AppliedAt, b.Ready = rev, applied, false
	return b
}

// soakedAt: the city runs rev and soaked there earlier.
func (b *cityBuilder) soakedAt(rev string) *cityBuilder {
	b.Revision, b.AppliedAt, b.Soaked = rev, t0.Add(-time.Hour), true
	return b
}

func (b *cityBuilder) previous(rev string) *cityBuilder { b.Previous = rev; return b }

func (b *cityBuilder) failing(reason string) *cityBuilder {
	b.Failure, b.FailureMessage = reason, "instance web-0: "+reason
	b.Ready = false
	return b
}

func (b *cityBuilder) rolledBackFrom(rev, reason string) *cityBuilder {
	b.RolledBackFrom, b.RollbackReason = rev, reason
	return b
}

func cities(bs ...*cityBuilder) []City {
	out := make([]City, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.City)
	}
	return out
}

func waves(codes ...[]string) Strategy {
	return Strategy{Kind: computev1alpha.WavesCityRollout, Waves: codes, Halting: true, ProgressDeadline: DefaultProgressDeadline}
}

func canary(city string, size intstr.IntOrString) Strategy {
	return Strategy{Kind: computev1alpha.CanaryCityRollout, CanaryCity: city, WaveSize: &size, Halting: true, ProgressDeadline: DefaultProgressDeadline}
}

func (s Strategy) soak(d time.Duration) Strategy { s.Soak = d; return s }
func (s Strategy) paused() Strategy              { s.Paused = true; return s }
func (s Strategy) manual() Strategy              { s.ManualApproval = true; return s }
func (s Strategy) rollback() Strategy            { s.Rollback = true; return s }
func (s Strategy) maxUnavailable(n int) Strategy {
	s.MaxUnavailable = ptr.To(intstr.FromInt32(int32(n)))
	return s
}
func (s Strategy) deadline(d time.Duration) Strategy { s.ProgressDeadline = d; return s }

// outcome is what a test compares of a plan.
type outcome struct {
	Phase     computev1alpha.RolloutPhase
	Wave      int
	Revisions map[string]string
	States    map[string]computev1alpha.CityRolloutState
	Halt      string
}

func summarize(p Schedule) outcome {
	o := outcome{Phase: p.Phase, Wave: p.Wave, Revisions: map[string]string{}, States: map[string]computev1alpha.CityRolloutState{}}
	for _, c := range p.Cities {
		o.Revisions[c.Key[len("edge/"):]] = c.Revision
		o.States[c.Key[len("edge/"):]] = c.State
	}
	if p.Halt != nil {
		o.Halt = p.Halt.Key + " " + p.Halt.Reason
	}
	return o
}

func revs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func states(kv ...any) map[string]computev1alpha.CityRolloutState {
	m := map[string]computev1alpha.CityRolloutState{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(computev1alpha.CityRolloutState)
	}
	return m
}

const (
	updated    = computev1alpha.CityUpdated
	updatingS  = computev1alpha.CityUpdating
	soaking    = computev1alpha.CitySoaking
	waiting    = computev1alpha.CityWaiting
	halted     = computev1alpha.CityHalted
	rolledBack = computev1alpha.CityRolledBack
)

func TestMake(t *testing.T) {
	long := t0.Add(-time.Hour)
	threeCities := func() []*cityBuilder {
		return []*cityBuilder{city("DFW").ready(revA, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)}
	}
	_ = threeCities
	tests := map[string]struct {
		strategy Strategy
		approved int
		cities   []City
		want     outcome
	}{
		"without spec.rollout every city gets the new revision at once and nothing halts": {
			strategy: StrategyOf(nil),
			cities:   cities(city("DFW").ready(revA, long), city("LHR").updating(revC, t0.Add(-time.Hour)).failing(computev1alpha.ReasonImageUnavailable), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updatingS, "LHR", updatingS, "SIN", updatingS)},
		},
		"a new template goes to the first wave only": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities:   cities(city("DFW").ready(revA, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", waiting, "SIN", waiting)},
		},
		"a ready first wave soaks before the next starts": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).soak(5 * time.Minute),
			cities:   cities(city("DFW").ready(revC, t0.Add(-time.Minute)), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", soaking, "LHR", waiting, "SIN", waiting)},
		},
		"once the first wave has soaked the second wave starts": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).soak(5 * time.Minute),
			cities:   cities(city("DFW").ready(revC, t0.Add(-5*time.Minute)), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updated, "LHR", updatingS, "SIN", updatingS)},
		},
		"every city soaked is complete": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).soak(5 * time.Minute),
			cities:   cities(city("DFW").ready(revC, long), city("LHR").ready(revC, long), city("SIN").ready(revC, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseComplete, Wave: 0,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updated, "LHR", updated, "SIN", updated)},
		},
		"a bad image in the first wave halts the rollout and later waves keep the old revision": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities: cities(city("DFW").updating(revC, t0.Add(-time.Minute)).previous(revA).failing(computev1alpha.ReasonImageUnavailable),
				city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseHalted, Wave: 1, Halt: "edge/DFW ImageUnavailable",
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", halted, "LHR", waiting, "SIN", waiting)},
		},
		"with rollback the halted wave returns to its previous revision": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).rollback(),
			cities: cities(city("DFW").updating(revC, t0.Add(-time.Minute)).previous(revA).failing(computev1alpha.ReasonInstanceCrashing),
				city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseHalted, Wave: 1, Halt: "edge/DFW InstanceCrashing",
				Revisions: revs("DFW", revA, "LHR", revA, "SIN", revA),
				States:    states("DFW", rolledBack, "LHR", waiting, "SIN", waiting)},
		},
		"a rolled-back city keeps the rollout halted while the template stays": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).rollback(),
			cities: cities(city("DFW").ready(revA, t0.Add(-time.Minute)).rolledBackFrom(revC, computev1alpha.ReasonInstanceCrashing),
				city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseHalted, Wave: 1, Halt: "edge/DFW InstanceCrashing",
				Revisions: revs("DFW", revA, "LHR", revA, "SIN", revA),
				States:    states("DFW", rolledBack, "LHR", waiting, "SIN", waiting)},
		},
		"a city not ready by its progress deadline halts the rollout": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).deadline(10 * time.Minute),
			cities:   cities(city("DFW").updating(revC, t0.Add(-10*time.Minute)), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseHalted, Wave: 1, Halt: "edge/DFW ProgressDeadlineExceeded",
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", halted, "LHR", waiting, "SIN", waiting)},
		},
		"a new change mid-rollout restarts at wave 1 and no city goes back to the intermediate revision": {
			strategy: waves([]string{"DFW"}, []string{"LHR"}, []string{"SIN"}),
			cities:   cities(city("DFW").ready(revB, long), city("LHR").ready(revB, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revB, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", waiting, "SIN", waiting)},
		},
		"a soaked city that fails later neither halts the rollout nor holds the next wave back": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities: cities(city("DFW").soakedAt(revC).failing(computev1alpha.ReasonInstanceCrashing),
				city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updated, "LHR", updatingS, "SIN", updatingS)},
		},
		"paused holds the next wave": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).paused(),
			cities:   cities(city("DFW").ready(revC, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhasePaused, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", updated, "LHR", waiting, "SIN", waiting)},
		},
		"manual approval holds the second wave until it is approved": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).manual(),
			approved: 1,
			cities:   cities(city("DFW").ready(revC, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseAwaitingApproval, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", updated, "LHR", waiting, "SIN", waiting)},
		},
		"an approved wave starts": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}).manual(),
			approved: 2,
			cities:   cities(city("DFW").ready(revC, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updated, "LHR", updatingS, "SIN", updatingS)},
		},
		"maxUnavailableCities bounds the cities updating at once": {
			strategy: waves([]string{"DFW", "LHR", "SIN"}).maxUnavailable(1),
			cities:   cities(city("DFW").ready(revA, long), city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", waiting, "SIN", waiting)},
		},
		"the canary goes first, then the others in waves of the wave size": {
			strategy: canary("LHR", intstr.FromInt32(1)),
			cities:   cities(city("DFW").ready(revA, long), city("LHR").ready(revC, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 2,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", updated, "SIN", waiting)},
		},
		"a city added mid-rollout starts at the base revision until its wave": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities:   cities(city("DFW").updating(revC, t0), city("LHR").ready(revA, long), city("SIN")),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revA, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", waiting, "SIN", waiting)},
		},
		"a first deployment creates every city at the target at once": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities:   cities(city("DFW"), city("LHR"), city("SIN")),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revC, "LHR", revC, "SIN", revC),
				States:    states("DFW", updatingS, "LHR", updatingS, "SIN", updatingS)},
		},
		"an undo after a halt restores the first wave": {
			// The template returned to revA: DFW runs the bad revC.
			strategy: waves([]string{"DFW"}, []string{"LHR", "SIN"}),
			cities: cities(city("DFW").updating(revC, t0.Add(-time.Minute)).previous(revA).failing(computev1alpha.ReasonImageUnavailable),
				city("LHR").ready(revA, long), city("SIN").ready(revA, long)),
			want: outcome{Phase: computev1alpha.RolloutPhaseProgressing, Wave: 1,
				Revisions: revs("DFW", revA, "LHR", revA, "SIN", revA),
				States:    states("DFW", updatingS, "LHR", updated, "SIN", updated)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target := revC
			if name == "an undo after a halt restores the first wave" {
				target = revA
			}
			p := Make(Input{Strategy: tc.strategy, Target: target, ApprovedWave: tc.approved, Cities: tc.cities, Now: t0})
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s\nmessage: %s", diff, p.Message)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	cs := cities(city("DFW"), city("LHR"), city("SIN"), city("AMS"), city("NRT"))
	tests := map[string]struct {
		strategy Strategy
		want     [][]string
	}{
		"all at once is one wave": {
			strategy: StrategyOf(nil),
			want:     [][]string{{"edge/AMS", "edge/DFW", "edge/LHR", "edge/NRT", "edge/SIN"}},
		},
		"cities no wave names form a last wave, and a city listed twice counts once": {
			strategy: waves([]string{"DFW"}, []string{"LHR", "DFW"}, []string{"XYZ"}),
			want:     [][]string{{"edge/DFW"}, {"edge/LHR"}, {"edge/AMS", "edge/NRT", "edge/SIN"}},
		},
		"canary then waves of two": {
			strategy: canary("SIN", intstr.FromInt32(2)),
			want:     [][]string{{"edge/SIN"}, {"edge/AMS", "edge/DFW"}, {"edge/LHR", "edge/NRT"}},
		},
		"canary defaults to the first city and a percentage rounds up": {
			strategy: canary("", intstr.FromString("30%")),
			want:     [][]string{{"edge/AMS"}, {"edge/DFW", "edge/LHR"}, {"edge/NRT", "edge/SIN"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := Make(Input{Strategy: tc.strategy, Target: revC, Cities: cs, Now: t0})
			if diff := cmp.Diff(tc.want, p.Waves); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	st := waves([]string{"DFW"}, []string{"LHR"}).soak(5 * time.Minute).deadline(10 * time.Minute)
	p := Make(Input{Strategy: st, Target: revC, Now: t0,
		Cities: cities(city("DFW").ready(revC, t0.Add(-2*time.Minute)), city("LHR").ready(revA, t0.Add(-time.Hour)))})
	if p.RequeueAfter != 3*time.Minute {
		t.Errorf("RequeueAfter = %s, want the 3m left of the soak", p.RequeueAfter)
	}
	p = Make(Input{Strategy: st, Target: revC, Now: t0,
		Cities: cities(city("DFW").updating(revC, t0.Add(-4*time.Minute)), city("LHR").ready(revA, t0.Add(-time.Hour)))})
	if p.RequeueAfter != 6*time.Minute {
		t.Errorf("RequeueAfter = %s, want the 6m left of the progress deadline", p.RequeueAfter)
	}
}

// FuzzMake checks the planner's invariants on arbitrary observations.
func FuzzMake(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(1), uint8(2), uint8(0))
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 13, 200, 31}, uint8(2), uint8(0), uint8(7))
	f.Add([]byte{255, 0, 255, 0, 17, 34, 51}, uint8(0), uint8(1), uint8(255))
	f.Fuzz(func(t *testing.T, data []byte, kind, maxUnav, flags uint8) {
		revisions := []string{"", revA, revB, revC}
		codes := []string{"AMS", "DFW", "LHR", "NRT", "SIN", "DFW"}
		var cs []City
		for i := 0; i+1 < len(data) && len(cs) < 12; i += 2 {
			b, c := data[i], data[i+1]
			code := codes[int(b)%len(codes)]
			key := fmt.Sprintf("p%d/%s", len(cs)%2, code)
			dup := false
			for _, x := range cs {
				dup = dup || x.Key == key
			}
			if dup {
				continue
			}
			ct := City{Key: key, Code: code, Revision: revisions[int(c)%4], Previous: revisions[int(c>>2)%4]}
			if ct.Revision != "" {
				ct.AppliedAt = t0.Add(-time.Duration(c>>4) * time.Minute)
				ct.Ready = c&0x40 != 0
				if ct.Ready {
					ct.ReadySince = ct.AppliedAt.Add(time.Duration(b>>5) * time.Minute)
				} else if b&0x80 != 0 {
					ct.Failure = computev1alpha.ReasonImageUnavailable
				}
				if b&0x40 != 0 && ct.Revision != revC {
					ct.RolledBackFrom = revC
				}
				ct.Soaked = b&0x20 != 0 && b&0x10 != 0
			}
			cs = append(cs, ct)
		}
		var st Strategy
		switch kind % 4 {
		case 0:
			st = StrategyOf(nil)
		case 1:
			st = waves([]string{"DFW"}, []string{"LHR", "XYZ"})
		case 2:
			st = canary("SIN", intstr.FromString("40%"))
		case 3:
			st = waves([]string{"NRT", "AMS"})
		}
		if kind%4 != 0 {
			st.Soak = time.Duration(flags&0x3) * time.Minute
			st.ProgressDeadline = time.Duration(flags>>2&0x7) * time.Minute
			st.Paused = flags&0x20 != 0
			st.ManualApproval = flags&0x40 != 0
			st.Rollback = flags&0x80 != 0
			if maxUnav%4 != 0 {
				st.MaxUnavailable = ptr.To(intstr.FromInt32(int32(maxUnav % 4)))
			}
		}
		in := Input{Strategy: st, Target: revC, ApprovedWave: int(maxUnav >> 4), Cities: cs, Now: t0}
		p := Make(in)
		again := Make(in)
		if diff := cmp.Diff(p, again); diff != "" {
			t.Fatalf("the plan is not deterministic:\n%s", diff)
		}
		if len(p.Cities) != len(cs) {
			t.Fatalf("%d decisions for %d cities", len(p.Cities), len(cs))
		}

		// Which cities are unavailable because of the rollout, before and after.
		before, advanced := 0, 0
		for i, c := range cs {
			d := p.Cities[i]
			allowed := d.Revision == c.Revision || d.Revision == revC ||
				(d.Rollback && d.Revision == c.Previous) ||
				(c.Revision == "" && (d.Revision == revA || d.Revision == revB))
			if !allowed || d.Revision == "" {
				t.Fatalf("city %s runs %q, was given %q: neither its own, the target, nor (rolled back) its previous revision", c.Key, c.Revision, d.Revision)
			}
			if c.Revision == revC && !c.Ready && !c.Soaked {
				before++
			}
			if p.Halt != nil && p.Halt.Key == c.Key && c.Soaked && c.Revision == revC {
				t.Fatalf("city %s halted the rollout although it had soaked", c.Key)
			}
			if d.Advance && c.Revision != "" {
				advanced++
				if p.Halt != nil || st.Paused {
					t.Fatalf("city %s advanced while the rollout is %s", c.Key, p.Phase)
				}
				if d.Wave != p.Wave {
					t.Fatalf("city %s of wave %d advanced during wave %d", c.Key, d.Wave, p.Wave)
				}
			}
		}
		if st.Halting && st.MaxUnavailable != nil {
			limit := st.MaxUnavailable.IntValue()
			if before+advanced > max(limit, before) {
				t.Fatalf("%d cities updating after the plan (%d before, %d advanced), at most %d allowed", before+advanced, before, advanced, limit)
			}
		}
	})
}
