//go:build bench

package federation

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/bench/internal/apimetrics"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

// BenchmarkScale is P4 and P5 on the local platform (real Karmada, every
// compute process, compute-quota, the simulated provider with no delay):
//
//   - P4, scale: WORKLOADS Workloads (COMPUTE_BENCH_WORKLOADS, default
//     1000) of 3 cities × 2 replicas, Parallel, created 8 at a time like
//     a client applying a directory; the clock runs from the first create
//     until a watch of the project has seen every Workload Available with
//     6 ready replicas for its generation. Printed: that time, the
//     creates' own span, API writes per Instance in every plane (counted
//     by each apiserver's apiserver_request_total, until the planes have
//     been quiet for 2 s), peak RSS (VmHWM) and CPU seconds of every
//     process compute-local runs, and each apiserver's request latency
//     p99 over the run (apiserver_request_duration_seconds, WATCH and
//     CONNECT left out);
//   - P5, restart under load: with those Instances in place, the
//     management compute-manager and the first cell's compute-manager are
//     restarted (SIGTERM, then started again and healthy); at once a user
//     scales one Workload from 2 to 3 per city. Printed: the time from
//     that edit until every city has its third Instance (created, then
//     Ready) and the Workload shows 9 ready; the full resync time (from
//     the restart until the restarted managers' work queues are empty and
//     the planes have been quiet for 2 s) and the writes made meanwhile
//     per plane (the edit's own few included). COMPUTE_BENCH_RESTARTS=N
//     does it N times (scale-0, scale-1, … edited), printing each and
//     the median.
//
// Run with:
//
//	COMPUTE_BENCH_WORKLOADS=1000 go test -tags bench -run '^$' -bench Scale -benchtime 1x -timeout 60m ./test/bench/federation/
//
// COMPUTE_BENCH_KEEP=1 keeps the platform's state directory (and every
// process's log in it) after a run that passed, as a failed run always does.
// Nothing is asserted about the figures.
func BenchmarkScale(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_WORKLOADS")); err == nil && v > 0 {
		n = v
	}
	perWorkload := len(benchCities) * replicasPerCity
	dir, err := os.MkdirTemp("", "compute-bench-scale-")
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delay := time.Duration(0)
	p, err := platform.Up(ctx, platform.Config{
		StateDir: dir, Cities: benchCities, Managers: platform.ManagersRequired, Log: os.Stderr,
		ProviderDelay: &delay,
		ManagerBinary: os.Getenv("COMPUTE_BENCH_MANAGER_BINARY"),
		// Every Instance of the run, and P5's extra ones, fit.
		QuotaGrant: platform.QuotaGrant{
			Instances: int64(n*(perWorkload+len(benchCities)) + 100),
			VCPU:      strconv.Itoa(n*(perWorkload+len(benchCities)) + 100),
			Memory:    strconv.Itoa(2*(n*(perWorkload+len(benchCities))+100)) + "Gi",
		},
	})
	if err != nil {
		b.Fatalf("failed to start the platform: %v", err)
	}
	defer p.Down()
	e := connect(b, p)
	m := newMeters(b, p)
	s := newScaleWatch(ctx, b, e)
	idle := m.snapshot(ctx)

	// P4.
	loadBefore := procstat.LoadAverage()
	before := m.snapshot(ctx)
	began := time.Now()
	var created time.Duration
	var retried atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			// A create the apiserver could not finish (its admission
			// webhook timed out, say, on a starved machine) is sent
			// again, as a client applying a directory would retry it;
			// the retries are printed.
			for attempt := 0; ; attempt++ {
				err := e.project.Create(gctx, e.workload(fmt.Sprintf("scale-%d", i)))
				if attempt > 0 && apierrors.IsAlreadyExists(err) {
					return nil // an earlier attempt went through after all
				}
				if !apierrors.IsInternalError(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) && !apierrors.IsTooManyRequests(err) {
					return err
				}
				retried.Add(1)
				time.Sleep(time.Second)
			}
		})
	}
	must(b, g.Wait())
	created = time.Since(began)
	// A 2-core machine serves about 3-5 Instances a second here.
	timeout := max(10*time.Minute, time.Duration(n)*5*time.Second)
	stopProgress := s.progress(began, n, n*perWorkload)
	ok := s.waitFor(timeout, func() bool { return s.available == n })
	stopProgress()
	if !ok {
		b.Fatalf("only %d of %d Workloads Available after %s", s.snapshotAvailable(), n, timeout)
	}
	converged := time.Since(began)
	m.quiet(ctx, 2*time.Second, 2*time.Minute)
	after := m.snapshot(ctx)
	loadAfter := procstat.LoadAverage()

	instances := n * perWorkload
	report("scale (P4) conditions: %d Workloads × %d cities × %d = %d Instances; Parallel; delay 0; %s; %d CPUs; load average before %s, after %s",
		n, len(benchCities), replicasPerCity, instances, p.State().QuotaCondition(), runtime.NumCPU(), loadBefore, loadAfter)
	report("scale: %d Workloads created (8 at a time; %d creates retried after a server error) in %s; all Available with %d ready in %s (%.1f Instances/s)",
		n, retried.Load(), created.Round(time.Millisecond), perWorkload, converged.Round(time.Millisecond), float64(instances)/converged.Seconds())
	m.printWrites("scale", before, after, instances, "Instance")
	m.printProcesses("scale", after, before)
	printMemory(idle, after, instances)
	m.printLatency("scale", before, after)
	b.ReportMetric(converged.Seconds(), "P4-available-s")
	b.ReportMetric(after.totalWrites()-before.totalWrites(), "P4-writes")
	b.ReportMetric((after.totalWrites()-before.totalWrites())/float64(instances), "P4-writes/instance")

	// P5, COMPUTE_BENCH_RESTARTS times (default 1), each editing another
	// Workload.
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_RESTARTS")); err == nil && v > 0 {
		rounds = min(v, n)
	}
	var acted, resynced []time.Duration
	for round := range rounds {
		a, r := restartScale(b, ctx, p, e, m, s, n, round)
		acted, resynced = append(acted, a), append(resynced, r)
	}
	slices.Sort(acted)
	slices.Sort(resynced)
	if rounds > 1 {
		report("restart: %d rounds: edit → created in every cell %s (median %s); full resync median %s",
			rounds, durations(acted), acted[rounds/2].Round(time.Millisecond), resynced[rounds/2].Round(time.Millisecond))
	}
	b.ReportMetric(acted[rounds/2].Seconds(), "P5-edit-acted-s")
	b.ReportMetric(resynced[rounds/2].Seconds(), "P5-resync-s")

	// The engine floor, after P5 (see engineFloor), and P4's ratios to it.
	f := engineFloor(b, ctx, p, e, m, n)
	m.printFloor(f, converged, before, after)
	b.ReportMetric(converged.Seconds()/f.took.Seconds(), "P4/floor-time")
	b.ReportMetric((after.totalWrites()-before.totalWrites())/(f.after.totalWrites()-f.before.totalWrites()), "P4/floor-writes")
}

// printMemory prints every compute process's peak RSS per 10,000 Instances
// it holds, derived: its RSS before P4 (idle) plus its growth over P4
// scaled linearly from the Instances it holds (all of them for the
// management role and compute-quota, a third for a cell).
func printMemory(idle, after sample, instances int) {
	names := slices.Sorted(maps.Keys(after.hwm))
	for _, name := range names {
		if !strings.HasPrefix(name, "compute-") {
			continue
		}
		held := instances
		if strings.HasPrefix(name, "compute-manager-cell-") {
			held = instances / len(benchCities)
		}
		base, peak := float64(idle.hwm[name])/(1<<20), float64(after.hwm[name])/(1<<20)
		report("scale: memory %-40s peak RSS %5.0f MiB holding %d Instances (idle %4.0f MiB); per 10,000 Instances (derived, linear) %5.0f MiB",
			name, peak, held, base, base+(peak-base)*10000/float64(held))
	}
}

// restartScale is P5, round round (from 0): the edited Workload is
// scale-<round>. It returns the time from the edit until every city had
// created its new Instance, and the full resync time.
func restartScale(b *testing.B, ctx context.Context, p *platform.Platform, e *env, m *meters, s *scaleWatch, n, round int) (actedOn, resyncTime time.Duration) {
	b.Helper()
	management := "compute-manager-" + platform.ProjectPlane(platform.DefaultProject)
	cell := "compute-manager-" + p.State().Clusters[0].Name
	loadBefore := procstat.LoadAverage()
	before := m.snapshot(ctx)
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range []string{management, cell} {
		g.Go(func() error { return p.RestartComponent(gctx, name, platform.StopOptions{}) })
	}
	must(b, g.Wait())
	restarted := time.Since(began)

	// The user's edit: one Workload from 2 to 3 per city.
	edited := fmt.Sprintf("scale-%d", round)
	scaledIn := func(prefix string) int {
		c := 0
		for pl, m := range s.scaled {
			if strings.HasPrefix(pl, prefix) {
				for _, w := range m {
					if w == edited {
						c++
					}
				}
			}
		}
		return c
	}
	want := len(benchCities) * (replicasPerCity + 1)
	w := &computev1alpha.Workload{}
	must(b, e.project.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: edited}, w))
	orig := w.DeepCopy()
	w.Spec.Placements[0].ScaleSettings.MinReplicas = replicasPerCity + 1
	edit := time.Now()
	must(b, e.project.Patch(ctx, w, client.MergeFrom(orig)))
	cities := len(benchCities)
	var hops []string
	for _, h := range []struct {
		name string
		cond func() bool
	}{
		{"project WDs scaled (WorkloadReconciler)", func() bool { return scaledIn("project") == cities }},
		{"hub copies scaled (federator)", func() bool { return scaledIn("hub") == cities }},
		{"cell WDs scaled (Karmada)", func() bool { return scaledIn("cell-") == cities }},
	} {
		if !s.waitFor(5*time.Minute, h.cond) {
			b.Fatalf("the edit of %s never reached: %s", edited, h.name)
		}
		hops = append(hops, fmt.Sprintf("%s %s", h.name, time.Since(edit).Round(time.Millisecond)))
	}
	if !s.waitFor(5*time.Minute, func() bool { return s.cellInstances(edited, false) == want }) {
		b.Fatalf("the edit of %s was not acted on in its cells within 5 minutes", edited)
	}
	actedOn = time.Since(edit)
	if !s.waitFor(5*time.Minute, func() bool { return s.cellInstances(edited, true) == want }) {
		b.Fatalf("the new Instances of %s were not Ready within 5 minutes", edited)
	}
	cellReady := time.Since(edit)
	if !s.waitFor(5*time.Minute, func() bool { return s.ready[edited] == want }) {
		b.Fatalf("Workload %s did not show %d ready within 5 minutes", edited, want)
	}
	shown := time.Since(edit)
	resync := m.resynced(ctx, []string{management, cell}, 2*time.Second, 10*time.Minute)
	after := m.snapshot(ctx)
	resyncTime = time.Since(began) - resync.quietFor

	report("restart (P5) round %d conditions: %d Workloads (%d Instances) in place; %s and %s restarted (SIGTERM, started again, healthy in %s); load average before %s, after %s",
		round+1, n, n*len(benchCities)*replicasPerCity, management, cell, restarted.Round(time.Millisecond), loadBefore, procstat.LoadAverage())
	report("restart: user's edit (%s: %d → %d per city) → created in every cell %s, Ready in every cell %s, Workload shows %d ready %s",
		edited, replicasPerCity, replicasPerCity+1, actedOn.Round(time.Millisecond), cellReady.Round(time.Millisecond), want, shown.Round(time.Millisecond))
	report("restart: the edit's way: %s", strings.Join(hops, ", "))
	report("restart: full resync (restart → restarted managers' queues empty, planes quiet 2 s) %s%s", resyncTime.Round(time.Millisecond), resync.note)
	m.printWrites("restart", before, after, 0, "")
	return actedOn, resyncTime
}

// scaleWatch counts, from watches, the Workloads Available with all their
// replicas ready and the Instances of every cell.
type scaleWatch struct {
	mu      sync.Mutex
	changed chan struct{}
	// ready is each Workload's ready replicas when it is Available for
	// its generation (absent otherwise).
	ready     map[string]int
	available int
	// cells holds every cell Instance: key → (Workload, Ready).
	cells map[string]cellInstance
	// scaled holds, per plane, the WorkloadDeployments (and their
	// Workload's name) of every Workload
	// that say minReplicas > replicasPerCity: P5's edit seen there.
	scaled map[string]map[string]string
	// deployments holds every WorkloadDeployment per plane ("cell-<city>"
	// for the cells), for the progress lines.
	deployments map[string]map[string]bool
}

type cellInstance struct {
	workload string
	ready    bool
}

func newScaleWatch(ctx context.Context, b *testing.B, e *env) *scaleWatch {
	b.Helper()
	s := &scaleWatch{changed: make(chan struct{}, 1), ready: map[string]int{}, cells: map[string]cellInstance{}, scaled: map[string]map[string]string{}, deployments: map[string]map[string]bool{}}
	scaledIn := func(plane string) func(client.Object, bool) {
		s.scaled[plane], s.deployments[plane] = map[string]string{}, map[string]bool{}
		return func(obj client.Object, deleted bool) {
			wd := obj.(*computev1alpha.WorkloadDeployment)
			key := wd.Namespace + "/" + wd.Name
			if deleted {
				delete(s.deployments[plane], key)
			} else {
				s.deployments[plane][key] = true
			}
			if !deleted && wd.Spec.ScaleSettings.MinReplicas > replicasPerCity {
				s.scaled[plane][key] = wd.Spec.WorkloadRef.Name
			} else {
				delete(s.scaled[plane], key)
			}
		}
	}
	follow(ctx, b, e.project, &computev1alpha.WorkloadDeploymentList{}, e.namespace, scaledIn("project"), s)
	follow(ctx, b, e.hub, &computev1alpha.WorkloadDeploymentList{}, e.hubNamespace, scaledIn("hub"), s)
	perWorkload := len(benchCities) * replicasPerCity
	follow(ctx, b, e.project, &computev1alpha.WorkloadList{}, e.namespace, func(obj client.Object, deleted bool) {
		w := obj.(*computev1alpha.Workload)
		_, was := s.ready[w.Name]
		wasAvailable := was && s.ready[w.Name] >= perWorkload
		delete(s.ready, w.Name)
		if !deleted && w.Status.ObservedGeneration == w.Generation && meta.IsStatusConditionTrue(w.Status.Conditions, computev1alpha.ConditionAvailable) {
			s.ready[w.Name] = int(w.Status.ReadyReplicas)
		}
		isAvailable := s.ready[w.Name] >= perWorkload
		switch {
		case isAvailable && !wasAvailable:
			s.available++
		case !isAvailable && wasAvailable:
			s.available--
		}
	}, s)
	for city, c := range e.cells {
		follow(ctx, b, c, &computev1alpha.WorkloadDeploymentList{}, e.hubNamespace, scaledIn("cell-"+city), s)
		follow(ctx, b, c, &computev1alpha.InstanceList{}, e.hubNamespace, func(obj client.Object, deleted bool) {
			key := city + "/" + obj.GetName()
			if deleted {
				delete(s.cells, key)
				return
			}
			inst := obj.(*computev1alpha.Instance)
			s.cells[key] = cellInstance{
				workload: inst.Labels[computev1alpha.WorkloadNameLabel],
				ready:    meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady),
			}
		}, s)
	}
	return s
}

// follow watches list's kind in namespace of c until ctx ends, calling
// observe under s.mu for every event.
func follow(ctx context.Context, b *testing.B, c client.WithWatch, list client.ObjectList, namespace string, observe func(client.Object, bool), s *scaleWatch) {
	b.Helper()
	w, err := c.Watch(ctx, list, client.InNamespace(namespace))
	if err != nil {
		b.Fatalf("failed to watch: %v", err)
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
					continue
				}
				s.mu.Lock()
				observe(obj, ev.Type == watch.Deleted)
				s.mu.Unlock()
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
			if ctx.Err() != nil {
				return
			}
			// A closed watch is opened again; its initial list replays
			// every object as Added, which observe takes as the latest.
			if w, err = c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(namespace)); err != nil {
				return
			}
		}
	}()
}

// waitFor waits until cond (called under s.mu) holds or d passes.
func (s *scaleWatch) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-s.changed:
		case <-deadline:
			return false
		}
	}
}

// progress prints, every 15 s until stopped, how many Workloads are
// Available and cell Instances Ready, to stderr.
func (s *scaleWatch) progress(began time.Time, workloads, instances int) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				ready := 0
				for _, inst := range s.cells {
					if inst.ready {
						ready++
					}
				}
				cellWDs := 0
				for pl, m := range s.deployments {
					if strings.HasPrefix(pl, "cell-") {
						cellWDs += len(m)
					}
				}
				fmt.Fprintf(os.Stderr, "scale: %s: WorkloadDeployments project %d, hub %d, cells %d; cell Instances %d, Ready %d/%d; Workloads Available %d/%d; load average %s\n",
					time.Since(began).Round(time.Second), len(s.deployments["project"]), len(s.deployments["hub"]), cellWDs,
					len(s.cells), ready, instances, s.available, workloads, procstat.LoadAverage())
				s.mu.Unlock()
			}
		}
	}()
	return func() { close(done) }
}

func (s *scaleWatch) snapshotAvailable() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.available
}

// cellInstances counts the cell Instances of Workload w (Ready ones only
// when ready is set); the caller holds s.mu.
func (s *scaleWatch) cellInstances(w string, ready bool) int {
	c := 0
	for _, inst := range s.cells {
		if inst.workload == w && (!ready || inst.ready) {
			c++
		}
	}
	return c
}

// meters reads the apiservers' metrics and the processes of the platform.
type meters struct {
	b      *testing.B
	p      *platform.Platform
	planes []string
	raw    map[string]rest.Interface
}

func newMeters(b *testing.B, p *platform.Platform) *meters {
	b.Helper()
	m := &meters{b: b, p: p, raw: map[string]rest.Interface{}}
	for _, pl := range p.State().Planes {
		cfg := rest.CopyConfig(p.Config(pl.Name))
		cfg.QPS, cfg.Burst = -1, 0
		c, err := rest.UnversionedRESTClientFor(withCodec(cfg))
		if err != nil {
			b.Fatal(err)
		}
		m.planes = append(m.planes, pl.Name)
		m.raw[pl.Name] = c
	}
	slices.Sort(m.planes)
	return m
}

// withCodec fills in what an unversioned REST client needs.
func withCodec(cfg *rest.Config) *rest.Config {
	cfg.GroupVersion = nil
	cfg.APIPath = "/"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return cfg
}

// sample is one reading of every plane and process.
type sample struct {
	// writes per plane, by "VERB resource[/subresource]".
	writes map[string]map[string]float64
	// latency buckets per plane: upper bound (seconds) → cumulative count
	// of non-watch requests.
	latency map[string]map[float64]float64
	// cpu and hwm (peak RSS) per process name.
	cpu map[string]time.Duration
	hwm map[string]int64
}

func (s sample) totalWrites() float64 {
	t := 0.0
	for _, w := range s.writes {
		t += apimetrics.Sum(w, nil)
	}
	return t
}

// activeWrites are the writes but the components' lease renewals, which
// never stop: what quiet waits on.
func (s sample) activeWrites() float64 {
	t := 0.0
	for _, w := range s.writes {
		t += apimetrics.Sum(w, apimetrics.NotLease)
	}
	return t
}

// snapshot reads every plane's metrics and every process's counters.
func (m *meters) snapshot(ctx context.Context) sample {
	s := sample{writes: map[string]map[string]float64{}, latency: map[string]map[float64]float64{}, cpu: map[string]time.Duration{}, hwm: map[string]int64{}}
	for _, pl := range m.planes {
		read, err := apimetrics.Read(ctx, m.raw[pl])
		if err != nil {
			m.b.Fatalf("%s: %v", pl, err)
		}
		s.writes[pl], s.latency[pl] = read.Writes, read.Latency
	}
	for _, proc := range m.p.Processes() {
		s.cpu[proc.Name] = procstat.CPU(proc.PID)
		s.hwm[proc.Name] = procstat.PeakRSS(proc.PID)
	}
	return s
}

// quiet waits until no plane has had a write (but lease renewals) for d
// (at most limit) and returns how long they had been quiet; 0 when they
// never were.
func (m *meters) quiet(ctx context.Context, d, limit time.Duration) time.Duration {
	quietFor, _ := m.settle(ctx, d, limit, nil)
	return quietFor
}

// resync is the end of a resync.
type resync struct {
	// quietFor is how long the planes had been quiet when it was seen.
	quietFor time.Duration
	note     string
}

// resynced waits until the named compute-managers' work queues are empty
// and no plane has had a write for d (at most limit).
func (m *meters) resynced(ctx context.Context, managers []string, d, limit time.Duration) resync {
	quietFor, err := m.settle(ctx, d, limit, func() (bool, error) {
		depth, err := m.queueDepth(ctx, managers)
		return depth == 0, err
	})
	switch {
	case err != nil:
		return resync{quietFor: m.quiet(ctx, d, limit), note: fmt.Sprintf(" (work queues not readable: %v; planes quiet only)", err)}
	case quietFor == 0:
		return resync{note: fmt.Sprintf(" (not settled within %s)", limit)}
	}
	return resync{quietFor: quietFor}
}

// settle polls the planes' write counters every 250 ms until they have not
// moved for d and idle (when set) says the managers are idle too, at most
// limit. It returns how long the planes had been quiet then (0 when limit
// passed first), or idle's error.
func (m *meters) settle(ctx context.Context, d, limit time.Duration, idle func() (bool, error)) (time.Duration, error) {
	deadline := time.Now().Add(limit)
	last, since := m.snapshot(ctx).activeWrites(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if n := m.snapshot(ctx).activeWrites(); n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) < d {
			continue
		}
		if idle != nil {
			ok, err := idle()
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
		}
		return time.Since(since), nil
	}
	return 0, nil
}

var metricsAddress = regexp.MustCompile(`^--metrics-bind-address=(.+)$`)

// queueDepth sums workqueue_depth over the named compute-managers.
func (m *meters) queueDepth(ctx context.Context, managers []string) (float64, error) {
	total := 0.0
	for _, c := range m.p.State().Components {
		if !slices.Contains(managers, c.Name) {
			continue
		}
		addr := ""
		for _, a := range c.Args {
			if mt := metricsAddress.FindStringSubmatch(a); mt != nil {
				addr = mt[1]
			}
		}
		if addr == "" {
			return 0, fmt.Errorf("%s has no --metrics-bind-address", c.Name)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "workqueue_depth{") {
				if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
					total += v
				}
			}
		}
	}
	return total, nil
}

// printWrites prints the writes of every plane between two samples, per
// object (an Instance, say: unit) when objects > 0, with the largest kinds
// of write.
func (m *meters) printWrites(what string, before, after sample, objects int, unit string) {
	all := 0.0
	for _, pl := range m.planes {
		d := map[string]float64{}
		sum := 0.0
		for k, v := range after.writes[pl] {
			if x := v - before.writes[pl][k]; x != 0 {
				d[k] = x
				sum += x
			}
		}
		all += sum
		keys := slices.Collect(maps.Keys(d))
		sort.Slice(keys, func(i, j int) bool { return d[keys[i]] > d[keys[j]] })
		var top []string
		for _, k := range keys[:min(len(keys), 12)] {
			top = append(top, fmt.Sprintf("%s %.0f", k, d[k]))
		}
		if objects > 0 {
			report("%s: writes %-16s %7.0f  %5.2f per %s  (%s)", what, pl, sum, sum/float64(objects), unit, strings.Join(top, ", "))
		} else {
			report("%s: writes %-16s %7.0f  (%s)", what, pl, sum, strings.Join(top, ", "))
		}
	}
	if objects > 0 {
		report("%s: writes all planes       %7.0f  %5.2f per %s", what, all, all/float64(objects), unit)
	} else {
		report("%s: writes all planes       %7.0f", what, all)
	}
}

// printProcesses prints every process's CPU seconds over the run and its
// peak RSS, compute's processes first.
func (m *meters) printProcesses(what string, after, before sample) {
	names := slices.Collect(maps.Keys(after.cpu))
	sort.Slice(names, func(i, j int) bool {
		ci, cj := strings.HasPrefix(names[i], "compute-"), strings.HasPrefix(names[j], "compute-")
		if ci != cj {
			return ci
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		report("%s: process %-40s CPU %7.1f s  peak RSS %5d MiB", what, name, (after.cpu[name] - before.cpu[name]).Seconds(), after.hwm[name]>>20)
	}
}

// printLatency prints each apiserver's p99 request latency between two
// samples (bucket upper bound).
func (m *meters) printLatency(what string, before, after sample) {
	for _, pl := range m.planes {
		d := map[float64]float64{}
		for le, v := range after.latency[pl] {
			d[le] = v - before.latency[pl][le]
		}
		les := slices.Collect(maps.Keys(d))
		slices.Sort(les)
		if len(les) == 0 || d[les[len(les)-1]] == 0 {
			continue
		}
		count := d[les[len(les)-1]]
		p99 := les[len(les)-1]
		for _, le := range les {
			if d[le] >= 0.99*count {
				p99 = le
				break
			}
		}
		report("%s: apiserver %-16s %7.0f requests (not WATCH), p99 ≤ %s", what, pl, count, time.Duration(p99*float64(time.Second)))
	}
}

// durations lists ds rounded to the millisecond, sorted as given.
func durations(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(out, ", ")
}
