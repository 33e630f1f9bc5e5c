package cityrollout

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// DefaultProgressDeadline is how long a city may take to become ready at a
// new revision when spec.rollout does not say.
const DefaultProgressDeadline = 10 * time.Minute

// Strategy is a normalised spec.rollout.
type Strategy struct {
	// Kind is AllAtOnce, Waves or Canary.
	Kind computev1alpha.CityRolloutStrategyType
	// Waves are the city codes of each explicit wave (Kind Waves).
	Waves [][]string
	// CanaryCity is the canary (Kind Canary); the first city when empty.
	CanaryCity string
	// WaveSize bounds each wave after the canary; nil is every city.
	WaveSize *intstr.IntOrString
	// MaxUnavailable bounds the cities updating at once; nil is no bound.
	MaxUnavailable *intstr.IntOrString
	// Soak is how long a wave's cities must be ready before the next wave.
	Soak time.Duration
	// ProgressDeadline is how long a city may take to become ready; 0 is
	// no deadline.
	ProgressDeadline time.Duration
	// Rollback returns a halted wave's cities to their previous revision.
	Rollback bool
	// ManualApproval makes every wave after the first wait for approval.
	ManualApproval bool
	// Paused stops new cities from getting the target.
	Paused bool
	// Halting says whether a rollout halts at all. Without spec.rollout a
	// Workload behaves as before rollouts existed: every city at once and
	// nothing halts.
	Halting bool
}

// StrategyOf normalises r; nil is the default: all at once, no halting.
func StrategyOf(r *computev1alpha.WorkloadRollout) Strategy {
	if r == nil {
		return Strategy{Kind: computev1alpha.AllAtOnceCityRollout}
	}
	s := Strategy{
		Kind:             cmp.Or(r.Strategy, computev1alpha.AllAtOnceCityRollout),
		MaxUnavailable:   r.MaxUnavailableCities,
		Rollback:         r.OnFailure == computev1alpha.RollbackOnFailure,
		ManualApproval:   r.Approval == computev1alpha.ManualRolloutApproval,
		Paused:           r.Paused,
		ProgressDeadline: DefaultProgressDeadline,
		Halting:          true,
	}
	if r.SoakSeconds != nil {
		s.Soak = time.Duration(*r.SoakSeconds) * time.Second
	}
	if r.ProgressDeadlineSeconds != nil {
		s.ProgressDeadline = time.Duration(*r.ProgressDeadlineSeconds) * time.Second
	}
	for _, w := range r.Waves {
		s.Waves = append(s.Waves, slices.Clone(w.CityCodes))
	}
	if r.Canary != nil {
		s.CanaryCity = r.Canary.CityCode
		s.WaveSize = r.Canary.WaveSize
	}
	return s
}

// City is one placement × city as observed.
type City struct {
	// Key identifies the city in the plan; unique.
	Key string
	// Name is how messages name the city ("placement/CITY"); Key when
	// empty.
	Name string
	// Code is the city code.
	Code string
	// Revision is the template hash of the revision the city runs; empty
	// when it has no deployment yet.
	Revision string
	// Previous is the revision the city ran before Revision; may be empty.
	Previous string
	// RolledBackFrom is the revision the city was rolled back from after a
	// halt, and RollbackReason why; empty when it was not.
	RolledBackFrom, RollbackReason string
	// AppliedAt is when the city's template last changed (it got Revision,
	// or was restarted); zero when unknown.
	AppliedAt time.Time
	// Soaked is set once the city has soaked at Revision: a later failure
	// there is an operational problem, not one of the rollout, and neither
	// halts it nor holds its waves back.
	Soaked bool
	// Ready is true when the cell reported the deployment's current spec
	// and every desired replica is ready and up to date.
	Ready bool
	// ReadySince is when the city became Ready.
	ReadySince time.Time
	// Failure is a halting reason the city's Instances report (see
	// status.HaltsRollout), with its message; empty when none.
	Failure, FailureMessage string
}

// Input is everything a plan is made from.
type Input struct {
	Strategy Strategy
	// Target is the template hash of the Workload's current revision.
	Target string
	// ApprovedWave is the highest wave (from 1) approved for Target.
	ApprovedWave int
	// Cities are the cities with a deployment or wanting one.
	Cities []City
	// Now is the time of the plan.
	Now time.Time
}

// CityPlan is the decision for one city.
type CityPlan struct {
	// Key is the city's key.
	Key string
	// Wave is the city's wave, from 1.
	Wave int
	// Revision is the template hash the city must run.
	Revision string
	// Advance is set when Revision is the target and the city does not run
	// it yet; Rollback when Revision is the city's previous revision.
	Advance, Rollback bool
	// Soaked is set when the city has soaked at the target (to be recorded
	// on the city).
	Soaked bool
	// State is where the city stands.
	State computev1alpha.CityRolloutState
	// Reason and Message explain a halted or waiting city.
	Reason, Message string
}

// Halt names the city that halted a rollout: its Key, and its Name for
// messages.
type Halt struct {
	Key, Name, Reason, Message string
}

// Schedule is the decision for every city.
type Schedule struct {
	// Waves are the city keys of each wave, in order.
	Waves [][]string
	// Cities are the decisions, in the order of Input.Cities.
	Cities []CityPlan
	// Phase is the rollout's phase.
	Phase computev1alpha.RolloutPhase
	// Wave is the active wave, from 1; 0 when complete.
	Wave int
	// Halt is the city that halted the rollout, nil when not halted.
	Halt *Halt
	// Message explains the phase.
	Message string
	// RequeueAfter is when the plan changes by the passing of time alone
	// (a soak ends, a deadline passes); 0 when it does not.
	RequeueAfter time.Duration
}

// Make plans in.
func Make(in Input) Schedule {
	st := in.Strategy
	if !st.Halting {
		// No spec.rollout: every city at once, as before rollouts existed.
		st = Strategy{Kind: computev1alpha.AllAtOnceCityRollout}
	}
	p := &planner{in: in, st: st, plan: Schedule{Cities: make([]CityPlan, len(in.Cities))}}
	p.waveOf, p.plan.Waves = order(st, in.Cities)
	updating := p.soak()

	// The active wave: the first with a city that has not soaked at the
	// target.
	p.active = len(p.plan.Waves)
	for i := range in.Cities {
		if !p.soaked[i] {
			p.active = min(p.active, p.waveOf[i])
		}
	}
	p.plan.Halt = findHalt(st, in, p.waveOf, p.soaked)
	p.decide(p.gate(), updating)
	if p.plan.Halt != nil {
		p.halt()
	}
	p.plan.Phase, p.plan.Wave, p.plan.Message = phase(p.plan.Halt, p.gate(), p.active, len(p.plan.Waves))
	p.plan.RequeueAfter = requeueAfter(st, in, p.soaked)
	return p.plan
}

// planner is one Make in progress.
type planner struct {
	in   Input
	st   Strategy
	plan Schedule
	// waveOf is each city's wave (from 0); active the active wave.
	waveOf []int
	active int
	// soaked is set on cities that run the target and have soaked.
	soaked []bool
}

// soak starts every city's decision where it is, marks the cities that
// run the target and have soaked, and returns how many run it and are not
// ready yet.
func (p *planner) soak() (updating int) {
	in := p.in
	p.soaked = make([]bool, len(in.Cities))
	for i, c := range in.Cities {
		p.plan.Cities[i] = CityPlan{Key: c.Key, Wave: p.waveOf[i] + 1, Revision: c.Revision}
		if c.Revision == in.Target {
			p.soaked[i] = c.Soaked || c.Ready && !in.Now.Before(readyAt(c).Add(p.st.Soak))
			p.plan.Cities[i].Soaked = p.soaked[i]
			if !c.Ready && !p.soaked[i] {
				updating++
			}
		}
	}
	return updating
}

// gate says what holds new cities back, empty when nothing does.
func (p *planner) gate() string {
	in, st := p.in, p.st
	switch {
	case p.plan.Halt != nil:
		return gateHalted
	case st.Paused:
		return gatePaused
	case st.ManualApproval && p.active > 0 && p.active < len(p.plan.Waves) && in.ApprovedWave < p.active+1 &&
		!waveStarted(in, p.waveOf, p.active):
		return gateApproval
	}
	return ""
}

// decide gives every city, wave by wave, its revision and state: the
// target when its wave is active, nothing holds it back (gate) and the
// budget of cities not yet ready allows (updating of them already are).
func (p *planner) decide(gate string, updating int) {
	in, n := p.in, len(p.in.Cities)
	base := baseRevision(in)
	budget := math.MaxInt
	if p.st.MaxUnavailable != nil {
		budget = max(0, scaled(p.st.MaxUnavailable, n, n)-updating)
	}
	for _, i := range byWave(p.waveOf) {
		c, cp := in.Cities[i], &p.plan.Cities[i]
		w := p.waveOf[i]
		switch {
		case c.Revision == in.Target:
			cp.State = cityState(c, p.soaked[i])
		case c.Revision == "":
			// No deployment yet: it never served, so it costs no budget.
			if w <= p.active && gate == "" || base == "" {
				cp.Revision, cp.Advance, cp.State = in.Target, true, computev1alpha.CityUpdating
			} else {
				cp.Revision, cp.State = base, computev1alpha.CityWaiting
			}
		case c.RolledBackFrom == in.Target:
			cp.State, cp.Reason = computev1alpha.CityRolledBack, c.RollbackReason
			cp.Message = "rolled back to its previous revision after the rollout halted"
		case w <= p.active && gate == "" && budget > 0:
			cp.Revision, cp.Advance, cp.State = in.Target, true, computev1alpha.CityUpdating
			budget--
		default:
			cp.State = computev1alpha.CityWaiting
			cp.Message = waitMessage(gate, w, p.active)
		}
	}
}

// halt marks the city that halted the rollout and, with rollback, returns
// the halted wave's cities (and later ones) at the target to their
// previous revision.
func (p *planner) halt() {
	in, halt := p.in, p.plan.Halt
	for i, c := range in.Cities {
		cp := &p.plan.Cities[i]
		if c.Key == halt.Key && c.Revision == in.Target {
			cp.State, cp.Reason, cp.Message = computev1alpha.CityHalted, halt.Reason, halt.Message
		}
		if p.st.Rollback && c.Revision == in.Target && p.waveOf[i] >= p.active && c.Previous != "" && c.Previous != in.Target {
			cp.Revision, cp.Rollback, cp.Advance = c.Previous, true, false
			cp.State = computev1alpha.CityRolledBack
			cp.Reason = halt.Reason
			cp.Message = "rolled back to its previous revision after the rollout halted"
		}
	}
}

// What holds new cities back.
const (
	gateHalted   = "halted"
	gatePaused   = "paused"
	gateApproval = "approval"
)

// readyAt is when a city's soak starts: when it became ready, and never
// before it got its revision.
func readyAt(c City) time.Time {
	if c.AppliedAt.After(c.ReadySince) {
		return c.AppliedAt
	}
	return c.ReadySince
}

// cityState is the state of a city that runs the target.
func cityState(c City, soaked bool) computev1alpha.CityRolloutState {
	switch {
	case soaked:
		return computev1alpha.CityUpdated
	case c.Ready:
		return computev1alpha.CitySoaking
	default:
		return computev1alpha.CityUpdating
	}
}

// waveStarted reports whether a city of wave w runs the target already:
// the wave was approved (or started before approval was required).
func waveStarted(in Input, waveOf []int, w int) bool {
	for i, c := range in.Cities {
		if waveOf[i] == w && c.Revision == in.Target && c.Revision != "" {
			return true
		}
	}
	return false
}

// waitMessage says what a waiting city waits for.
func waitMessage(gate string, wave, active int) string {
	switch gate {
	case gateHalted:
		return "keeps its revision: the rollout halted"
	case gatePaused:
		return "keeps its revision: the rollout is paused"
	case gateApproval:
		return fmt.Sprintf("keeps its revision: wave %d waits for approval", active+1)
	}
	if wave > active {
		return fmt.Sprintf("keeps its revision until wave %d starts", wave+1)
	}
	return "keeps its revision: too many cities are updating (maxUnavailableCities)"
}

// phase summarises the rollout.
func phase(halt *Halt, gate string, active, waves int) (computev1alpha.RolloutPhase, int, string) {
	if halt != nil {
		msg := fmt.Sprintf("halted in %s: %s", cmp.Or(halt.Name, halt.Key), halt.Reason)
		if halt.Message != "" {
			msg += ": " + halt.Message
		}
		msg += "; later waves keep their revision. Fix the template and apply it (the rollout restarts at wave 1), or run `rollout undo`"
		return computev1alpha.RolloutPhaseHalted, active + 1, msg
	}
	if active >= waves {
		return computev1alpha.RolloutPhaseComplete, 0, "every city runs the current revision"
	}
	switch gate {
	case gatePaused:
		return computev1alpha.RolloutPhasePaused, active + 1,
			fmt.Sprintf("paused at wave %d of %d; run `rollout resume` to continue", active+1, waves)
	case gateApproval:
		return computev1alpha.RolloutPhaseAwaitingApproval, active + 1,
			fmt.Sprintf("wave %d of %d waits for approval; run `rollout approve`", active+1, waves)
	}
	return computev1alpha.RolloutPhaseProgressing, active + 1, fmt.Sprintf("wave %d of %d in progress", active+1, waves)
}

// findHalt returns the first city, in wave order, that halts the rollout.
func findHalt(st Strategy, in Input, waveOf []int, soaked []bool) *Halt {
	if !st.Halting {
		return nil
	}
	for _, i := range byWave(waveOf) {
		c := in.Cities[i]
		switch {
		case c.RolledBackFrom != "" && c.RolledBackFrom == in.Target && c.Revision != in.Target:
			return &Halt{Key: c.Key, Name: c.Name, Reason: cmp.Or(c.RollbackReason, computev1alpha.ReasonRolloutHalted),
				Message: "rolled back to its previous revision"}
		case c.Revision != in.Target || soaked[i]:
		case c.Failure != "" && !c.Ready:
			return &Halt{Key: c.Key, Name: c.Name, Reason: c.Failure, Message: c.FailureMessage}
		case !c.Ready && st.ProgressDeadline > 0 && !c.AppliedAt.IsZero() && !in.Now.Before(c.AppliedAt.Add(st.ProgressDeadline)):
			return &Halt{Key: c.Key, Name: c.Name, Reason: computev1alpha.ReasonProgressDeadlineExceeded,
				Message: fmt.Sprintf("not ready %s after it got the new revision", st.ProgressDeadline)}
		}
	}
	return nil
}

// requeueAfter is the time until a soak ends or a deadline passes.
func requeueAfter(st Strategy, in Input, soaked []bool) time.Duration {
	var next time.Duration
	consider := func(at time.Time) {
		if d := at.Sub(in.Now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	for i, c := range in.Cities {
		if c.Revision != in.Target || soaked[i] {
			continue
		}
		if c.Ready {
			consider(readyAt(c).Add(st.Soak))
		} else if st.Halting && st.ProgressDeadline > 0 && !c.AppliedAt.IsZero() {
			consider(c.AppliedAt.Add(st.ProgressDeadline))
		}
	}
	return next
}

// baseRevision is the revision a new city gets before its wave: the one
// most cities run besides the target (the lower hash on a tie); empty when
// none does.
func baseRevision(in Input) string {
	count := map[string]int{}
	for _, c := range in.Cities {
		if c.Revision != "" && c.Revision != in.Target {
			count[c.Revision]++
		}
	}
	best := ""
	for r, k := range count {
		if best == "" || k > count[best] || k == count[best] && r < best {
			best = r
		}
	}
	return best
}

// order puts every city in a wave. It returns the wave index of each city
// and the keys of each wave.
func order(st Strategy, cities []City) ([]int, [][]string) {
	n := len(cities)
	waveOf := make([]int, n)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(cities[a].Code, cities[b].Code), cmp.Compare(cities[a].Key, cities[b].Key))
	})

	var codes []string // distinct codes, sorted
	for _, i := range idx {
		if len(codes) == 0 || codes[len(codes)-1] != cities[i].Code {
			codes = append(codes, cities[i].Code)
		}
	}
	var waveOfCode map[string]int
	switch st.Kind {
	case computev1alpha.WavesCityRollout:
		waveOfCode = listedWaves(st.Waves, codes)
	case computev1alpha.CanaryCityRollout:
		waveOfCode = canaryWaves(st, codes)
	default:
		waveOfCode = map[string]int{}
		for _, code := range codes {
			waveOfCode[code] = 0
		}
	}

	// Number the waves densely, in order.
	used := map[int]bool{}
	for _, w := range waveOfCode {
		used[w] = true
	}
	ws := slices.Sorted(maps.Keys(used))
	dense := make(map[int]int, len(ws))
	for i, w := range ws {
		dense[w] = i
	}
	waves := make([][]string, len(ws))
	for _, i := range idx {
		w := dense[waveOfCode[cities[i].Code]]
		waveOf[i] = w
		waves[w] = append(waves[w], cities[i].Key)
	}
	return waveOf, waves
}

// listedWaves gives each of codes the index of the first listed wave that
// names it (waves naming none of codes are skipped); codes no wave names
// go last.
func listedWaves(listed [][]string, codes []string) map[string]int {
	out := map[string]int{}
	w := 0
	for _, wave := range listed {
		placed := false
		for _, code := range wave {
			if _, dup := out[code]; dup || !slices.Contains(codes, code) {
				continue
			}
			out[code], placed = w, true
		}
		if placed {
			w++
		}
	}
	for _, code := range codes {
		if _, ok := out[code]; !ok {
			out[code] = w
		}
	}
	return out
}

// canaryWaves puts the canary city (the first of codes when it names none
// of them) in wave 0 and the others, in order, in waves of st.WaveSize.
func canaryWaves(st Strategy, codes []string) map[string]int {
	out := map[string]int{}
	canary := st.CanaryCity
	if !slices.Contains(codes, canary) && len(codes) > 0 {
		canary = codes[0]
	}
	size := scaled(st.WaveSize, len(codes), len(codes))
	k := 0
	for _, code := range codes {
		if code == canary {
			out[code] = 0
			continue
		}
		out[code] = 1 + k/size
		k++
	}
	return out
}

// byWave returns the city indexes in wave order, then by key.
func byWave(waveOf []int) []int {
	idx := make([]int, len(waveOf))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(waveOf[a], waveOf[b]) })
	return idx
}

// scaled resolves a number or percentage of total, rounding a percentage
// up; nil or invalid is def. The result is at least 1.
func scaled(v *intstr.IntOrString, total, def int) int {
	if v == nil {
		return max(1, def)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return max(1, def)
	}
	return n
}

// Describe renders waves as "1: DFW  2: LHR, SIN" for a plan printout.
func Describe(waves [][]string) string {
	parts := make([]string, 0, len(waves))
	for i, w := range waves {
		parts = append(parts, fmt.Sprintf("%d: %s", i+1, strings.Join(w, ", ")))
	}
	return strings.Join(parts, "  ")
}

// CityWaves returns the waves st makes of the city codes, for a plan
// printout: the order Make rolls them in.
func CityWaves(st Strategy, codes []string) [][]string {
	cities := make([]City, 0, len(codes))
	seen := map[string]bool{}
	for _, c := range codes {
		if !seen[c] {
			seen[c] = true
			cities = append(cities, City{Key: c, Code: c})
		}
	}
	if !st.Halting {
		st = Strategy{Kind: computev1alpha.AllAtOnceCityRollout}
	}
	_, waves := order(st, cities)
	return waves
}
