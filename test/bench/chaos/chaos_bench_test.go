//go:build bench

// Package chaos is a soak of the local platform under chaos (issue #29):
// for COMPUTE_BENCH_CHAOS_DURATION (default 10m) a change driver edits a
// handful of Workloads of one project namespace bound to DFW, LHR and SIN
// every 2–5 s — scale (1 or 2 per city), image rollouts among a few tags
// (some Workloads roll their cities in waves), restarts of the whole
// Workload or of one city (the annotations `datumctl-compute restart`
// writes), creates and deletes — while a fault driver, every 20–40 s, kills
// a random process of the platform (etcd, any kube-apiserver or
// kube-controller-manager, Karmada's, compute-manager, compute-quota) and
// restarts it 3–8 s later, or partitions a random city for 10–30 s; one
// time in four it injects two faults at once.
//
// Then everything is healed (every stopped process started, every city
// reconnected) and the soak waits, up to 6 minutes
// (COMPUTE_BENCH_CHAOS_CONVERGE), until every remaining
// Workload has converged to its last spec — Available for its generation,
// every count at the desired, every projection Ready at its image — and
// every deleted Workload is gone from every plane. It prints the Instances
// lost, duplicated and orphaned (counted in every plane: cell Instances, hub
// write-backs, project projections, WorkloadDeployments in the project, hub
// and cells, and the project's ResourceClaims), the faults injected by
// kind, the changes made, the worst and p50 time to converge after the heal
// and the load average. A run that does not converge in time fails, and
// keeps the platform's state directory, every process's log in it
// (COMPUTE_BENCH_KEEP=1 keeps it after a run that passed too).
//
// Everything random comes from one seed, printed first:
// COMPUTE_BENCH_CHAOS_SEED=<seed> replays the same choices (the timing of
// the platform, of course, is not replayed). Run with:
//
//	go test -tags bench -run '^$' -bench Chaos -benchtime 1x -timeout 60m ./test/bench/chaos/
package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/bench/internal/benchkit"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

var cities = []string{"DFW", "LHR", "SIN"}

const (
	// namespace is the project namespace the Workloads live in.
	namespace = "bench-chaos"
	// defaultConvergeBound is how long the platform has, after the heal,
	// to converge; past it the run fails. COMPUTE_BENCH_CHAOS_CONVERGE
	// changes it.
	defaultConvergeBound = 6 * time.Minute
	// providerDelay is the simulated provider's provisioning delay.
	providerDelay = 2 * time.Second
	// requestTimeout bounds each call of the drivers and of the checks: a
	// partitioned or killed plane must not hang them.
	requestTimeout = 10 * time.Second
)

func BenchmarkChaos(b *testing.B) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("COMPUTE_BENCH_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			b.Fatalf("COMPUTE_BENCH_CHAOS_SEED=%q is not an unsigned integer", v)
		}
		seed = s
	}
	duration := 10 * time.Minute
	if v := os.Getenv("COMPUTE_BENCH_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("COMPUTE_BENCH_CHAOS_DURATION=%q is not a positive duration (90s, 10m)", v)
		}
		duration = d
	}
	convergeBound := defaultConvergeBound
	if v := os.Getenv("COMPUTE_BENCH_CHAOS_CONVERGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("COMPUTE_BENCH_CHAOS_CONVERGE=%q is not a positive duration (6m)", v)
		}
		convergeBound = d
	}
	benchkit.Report(b, "chaos seed %d (replay with COMPUTE_BENCH_CHAOS_SEED=%d), duration %s", seed, seed, duration)

	dir, err := os.MkdirTemp("", "compute-bench-chaos-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if b.Failed() || os.Getenv("COMPUTE_BENCH_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "keeping the platform state for inspection: %s (logs in %s/logs)\n", dir, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	ctx := context.Background()
	delay := providerDelay
	// The default grant allows 10 Instances; the soak runs up to 5
	// Workloads of 6, surges during rollouts and keeps a deleted
	// Workload's Instances while its city is cut off.
	grant := platform.QuotaGrant{Instances: 100, VCPU: "400", Memory: "800Gi"}
	p, err := platform.Up(ctx, platform.Config{StateDir: dir, Log: os.Stderr, Cities: cities,
		Managers: platform.ManagersRequired, ProviderDelay: &delay, QuotaGrant: grant})
	if err != nil {
		b.Fatalf("failed to start the platform: %v", err)
	}
	defer p.Down()

	pl := newPlanes(b, p)
	pl.hubNS = benchkit.ProjectNamespace(b, ctx, pl.project, namespace, cities)

	changes := newChangeDriver(pl.project, rand.New(rand.NewPCG(seed, 1)))
	for range 3 {
		if err := changes.create(ctx); err != nil {
			b.Fatalf("failed to create the first Workloads: %v", err)
		}
	}
	start := time.Now()
	if err := waitConverged(ctx, pl, 3*time.Minute, time.Now(), nil); err != nil {
		b.Fatalf("the first Workloads did not converge before any fault: %v", err)
	}
	benchkit.Report(b, "chaos: %d Workloads converged in %s; chaos for %s", len(changes.live), time.Since(start).Round(time.Second), duration)

	chaosCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()
	fd := newFaultDriver(p, rand.New(rand.NewPCG(seed, 2)))
	benchkit.Report(b, "chaos: the fault driver kills any of %s, or partitions any of %s", strings.Join(fd.victims(), ", "), strings.Join(cities, ", "))
	var wg sync.WaitGroup
	wg.Go(func() { changes.run(chaosCtx) })
	wg.Go(func() { fd.run(chaosCtx) })
	wg.Wait()

	if err := fd.healAll(ctx); err != nil {
		b.Fatalf("failed to heal the platform: %v", err)
	}
	healed := time.Now()
	benchkit.Report(b, "chaos: healed everything; waiting up to %s for convergence", convergeBound)

	if c, err := pl.check(ctx); err == nil {
		// Not losses yet: a rollout in flight has slots empty and
		// Instances at the old template.
		benchkit.Report(b, "at the heal: %d thing(s) not yet right (%d slot(s) empty, %d doubled, %d extra or at an old template, "+
			"the rest not yet Available or Ready)", len(c.problems), c.lost, c.dup, c.orphan)
	}
	times := map[string]time.Duration{}
	convErr := waitConverged(ctx, pl, convergeBound, healed, times)
	final := pl.lastCounts

	conv := slices.Sorted(maps.Values(times))
	worst, p50 := benchkit.Pick(conv, 100), benchkit.Pick(conv, 50)
	benchkit.Report(b, "conditions: 3 cities, 2-5 Workloads x 1-2 per city, simulated provider delay %s, %s, load average %s",
		providerDelay, p.State().QuotaCondition(), procstat.LoadAverage())
	benchkit.Report(b, "faults: %d events, %d faults (%s)", fd.events, fd.total(), fd.byKind())
	benchkit.Report(b, "changes: %d made (%s), %d refused or failed", changes.total(), changes.byKind(), changes.failed)
	liveDone := 0
	for _, name := range final.live {
		if _, ok := times[name]; ok {
			liveDone++
		}
	}
	benchkit.Report(b, "after the heal: lost %d, duplicated %d, orphaned %d; converged: %d of %d live Workloads, %d deleted ones cleaned up; worst %s, p50 %s",
		final.lost, final.dup, final.orphan, liveDone, len(final.live), len(times)-liveDone,
		worst.Round(100*time.Millisecond), p50.Round(100*time.Millisecond))
	b.ReportMetric(float64(fd.total()), "faults")
	b.ReportMetric(float64(changes.total()), "changes")
	b.ReportMetric(float64(final.lost), "lost")
	b.ReportMetric(float64(final.dup), "duplicated")
	b.ReportMetric(float64(final.orphan), "orphaned")
	b.ReportMetric(worst.Seconds(), "converge-max-s")
	b.ReportMetric(p50.Seconds(), "converge-p50-s")
	b.ReportMetric(procstat.Load1(), "load1")
	if convErr != nil {
		for _, pr := range final.problems {
			benchkit.Report(b, "  %s", pr)
		}
		b.Errorf("the platform did not converge within %s of the heal (seed %d): %v", convergeBound, seed, convErr)
	}
}

// waitConverged polls every plane until nothing is off or timeout passes,
// recording in times (when not nil) how long after since each Workload —
// live or deleted — first had nothing off.
func waitConverged(ctx context.Context, pl *planes, timeout time.Duration, since time.Time, times map[string]time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	// seen are the Workloads seen since: a deleted one is timed when the
	// last of it is gone, that is when it is seen no more.
	seen := map[string]bool{}
	for {
		c, err := pl.check(ctx)
		switch {
		case err != nil:
			last = err.Error()
		default:
			maps.Copy(seen, c.subjects)
			for name := range seen {
				if _, done := times[name]; times != nil && !done && len(c.bySubject[name]) == 0 {
					times[name] = time.Since(since)
				}
			}
			if len(c.problems) == 0 {
				return nil
			}
			last = fmt.Sprintf("%d problem(s), first: %s", len(c.problems), c.problems[0])
		}
		if time.Now().After(deadline) {
			return errors.New(last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// faultDriver breaks the platform: every 20–40 s one event of one or two
// faults, each a SIGKILL of a process (restarted 3–8 s later) or a
// partition of a city (healed after 10–30 s).
type faultDriver struct {
	p      *platform.Platform
	rng    *rand.Rand
	events int
	kinds  map[string]int
}

func newFaultDriver(p *platform.Platform, rng *rand.Rand) *faultDriver {
	return &faultDriver{p: p, rng: rng, kinds: map[string]int{}}
}

// victims are the processes the driver may kill: every recorded one but
// the link proxy, which carries the partitions themselves.
func (d *faultDriver) victims() []string {
	var out []string
	for _, c := range d.p.State().Components {
		if !strings.HasPrefix(c.Name, "link-proxy") {
			out = append(out, c.Name)
		}
	}
	return out
}

// kindOf names a fault's kind for the report: the process kind killed, or
// "partition".
func kindOf(component string) string {
	for _, k := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "karmada", "compute-manager", "compute-quota"} {
		if strings.HasPrefix(component, k) {
			return "kill " + k
		}
	}
	return "kill other"
}

// action is one step of an event: at its offset, run do.
type action struct {
	at   time.Duration
	what string
	do   func(ctx context.Context) error
}

func (d *faultDriver) run(ctx context.Context) {
	begin := time.Now()
	for {
		next := time.Now().Add(time.Duration(20+d.rng.IntN(21)) * time.Second)
		if !d.event(ctx, begin) {
			return
		}
		if !sleepUntil(ctx, next) {
			return
		}
	}
}

// event injects one or two faults and heals them on time; it returns false
// when ctx ended first (what is still broken is left to healAll).
func (d *faultDriver) event(ctx context.Context, begin time.Time) bool {
	n := 1
	if d.rng.IntN(4) == 0 {
		n = 2
	}
	var inject []string
	var killed []string
	var partitioned []string
	var later []action
	victims := d.victims()
	for range n {
		if d.rng.IntN(10) < 6 {
			name := victims[d.rng.IntN(len(victims))]
			if slices.Contains(killed, name) {
				continue
			}
			killed = append(killed, name)
			continue
		}
		city := cities[d.rng.IntN(len(cities))]
		if slices.Contains(partitioned, city) {
			continue
		}
		partitioned = append(partitioned, city)
		hold := time.Duration(10+d.rng.IntN(21)) * time.Second
		later = append(later, action{at: hold, what: "heal " + city, do: func(ctx context.Context) error { return d.p.Heal(ctx, city) }})
		inject = append(inject, fmt.Sprintf("partition %s for %s", city, hold))
	}
	if len(killed) > 0 {
		hold := time.Duration(3+d.rng.IntN(6)) * time.Second
		// Started again together, in the platform's start order (etcd
		// before the apiservers, an apiserver before its controllers).
		later = append(later, action{at: hold, what: "start " + strings.Join(killed, ", "), do: d.startStopped})
		for _, name := range killed {
			inject = append(inject, fmt.Sprintf("SIGKILL %s for %s", name, hold))
		}
	}
	d.events++
	fmt.Fprintf(os.Stderr, "chaos fault t+%s: %s\n", time.Since(begin).Round(time.Second), strings.Join(inject, "; "))
	injected := time.Now()
	for _, name := range killed {
		d.kinds[kindOf(name)]++
		if err := d.p.StopComponent(name, platform.StopOptions{Kill: true}); err != nil {
			fmt.Fprintf(os.Stderr, "chaos fault: failed to kill %s: %v\n", name, err)
		}
	}
	for _, city := range partitioned {
		d.kinds["partition"]++
		if err := d.p.Partition(ctx, city, 0, faults.PartitionHang); err != nil {
			fmt.Fprintf(os.Stderr, "chaos fault: failed to partition %s: %v\n", city, err)
		}
	}
	slices.SortFunc(later, func(a, b action) int { return int(a.at - b.at) })
	for _, a := range later {
		if !sleepUntil(ctx, injected.Add(a.at)) {
			return false
		}
		if err := a.do(ctx); err != nil {
			// Left to the next restart or to healAll; the soak judges
			// the end state, not this step.
			fmt.Fprintf(os.Stderr, "chaos fault: %s: %v\n", a.what, err)
		}
	}
	return true
}

// startStopped starts every stopped process, in the platform's start
// order.
func (d *faultDriver) startStopped(ctx context.Context) error {
	var errs []error
	for _, c := range d.p.State().Components {
		if !c.Stopped {
			continue
		}
		if err := d.p.StartComponent(ctx, c.Name); err != nil {
			errs = append(errs, fmt.Errorf("failed to start %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// healAll starts every stopped process and reconnects every city, trying
// a few times.
func (d *faultDriver) healAll(ctx context.Context) error {
	var err error
	for range 3 {
		err = d.startStopped(ctx)
		for _, city := range cities {
			if herr := d.p.Heal(ctx, city); herr != nil {
				err = errors.Join(err, fmt.Errorf("failed to heal %s: %w", city, herr))
			}
		}
		if err == nil {
			return nil
		}
		fmt.Fprintf(os.Stderr, "chaos heal: %v; trying again\n", err)
		time.Sleep(5 * time.Second)
	}
	return err
}

func (d *faultDriver) total() int {
	n := 0
	for _, v := range d.kinds {
		n += v
	}
	return n
}

func (d *faultDriver) byKind() string { return countsString(d.kinds) }

// countsString renders counts by kind, sorted: "image 3, scale 2".
func countsString(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// sleepUntil sleeps until t; false when ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
