//go:build bench

// Package platform benchmarks the local platform itself — the baseline the
// federation benchmarks compare against:
//
//   - cold start: `Up` in an empty state directory (fresh etcd, certificates,
//     compute-manager linked from the Go build cache);
//   - warm start: `Up` again in the same directory after `Down`;
//   - total platform RSS (sum of VmRSS of every process) once it has run
//     for a few seconds;
//   - warm start and RSS again with a real node in DFW (containerd, kubelet,
//     kube-scheduler, the registry and its images), when the machine can
//     run one;
//   - raw Karmada propagation of a ConfigMap from the hub to each cell:
//     create → present and delete → gone, p50/p99 over RUNS runs per cell
//     (default 50; set COMPUTE_BENCH_RUNS to change it).
//
// Run with:
//
//	go test -tags bench -run '^$' -bench . -benchtime 1x -timeout 20m ./test/bench/platform/
//
// Figures are printed (b.Log) and reported as benchmark metrics; nothing is
// asserted about them.
package platform

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
)

// settle is how long the platform runs before its memory is measured.
const settle = 5 * time.Second

// benchNamespace holds the propagated ConfigMaps.
const benchNamespace = "bench-propagation"

func BenchmarkPlatform(b *testing.B) {
	runs := 50
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	dir, err := os.MkdirTemp("", "compute-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	// Progress goes to stderr: benchmark logs are truncated.
	cfg := platform.Config{StateDir: dir, Log: os.Stderr}

	cold, p := start(b, ctx, cfg)
	p.Down()
	warm, p := start(b, ctx, cfg)
	defer p.Down()
	b.ReportMetric(cold.Seconds(), "cold-start-s")
	b.ReportMetric(warm.Seconds(), "warm-start-s")
	report("cold start %s, warm start %s; warm phases:", cold.Round(10*time.Millisecond), warm.Round(10*time.Millisecond))
	for _, t := range p.Timings() {
		report("  %-58s %s", t.Phase, t.Duration.Round(10*time.Millisecond))
	}

	time.Sleep(settle)
	rss, n := platformRSS(p)
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	report("platform RSS %d MiB over %d processes (after %s)", rss>>20, n, settle)

	hub := mustClient(b, p, platform.HubPlane)
	prepare(b, ctx, hub, p)
	for _, c := range p.State().Clusters {
		cell := mustClient(b, p, c.Name)
		create, del := propagate(b, ctx, hub, cell, c.City, runs)
		slices.Sort(create)
		slices.Sort(del)
		b.ReportMetric(ms(percentile(create, 50)), c.Name+"-create-p50-ms")
		b.ReportMetric(ms(percentile(create, 99)), c.Name+"-create-p99-ms")
		b.ReportMetric(ms(percentile(del, 50)), c.Name+"-delete-p50-ms")
		b.ReportMetric(ms(percentile(del, 99)), c.Name+"-delete-p99-ms")
		report("%s: ConfigMap create→present p50 %s p99 %s; delete→gone p50 %s p99 %s (%d runs)", c.Name,
			percentile(create, 50), percentile(create, 99), percentile(del, 50), percentile(del, 99), runs)
	}
	withNode(b, ctx, cfg, p, warm, rss)
}

// withNode starts the platform again (warm) with a real node in DFW and
// reports its start time and RSS beside the figures without one.
func withNode(b *testing.B, ctx context.Context, cfg platform.Config, p *platform.Platform, warm time.Duration, rss int64) {
	b.Helper()
	if err := platform.NodePrerequisites(); err != nil {
		report("no figures with a real node: %v", err)
		return
	}
	p.Down()
	cfg.Nodes = []string{"DFW"}
	nodeWarm, np := start(b, ctx, cfg)
	defer np.Down()
	time.Sleep(settle)
	nodeRSS, n := platformRSS(np)
	b.ReportMetric(nodeWarm.Seconds(), "warm-start-with-node-s")
	b.ReportMetric(float64(nodeRSS)/(1<<20), "rss-with-node-MiB")
	report("with a real node in DFW (containerd, kubelet, kube-scheduler, registry and demo images): warm start %s (%.2f× without), RSS %d MiB over %d processes (+%d MiB)",
		nodeWarm.Round(10*time.Millisecond), nodeWarm.Seconds()/warm.Seconds(), nodeRSS>>20, n, (nodeRSS-rss)>>20)
	for _, t := range np.Timings() {
		if strings.Contains(t.Phase, "node") {
			report("  %-58s %s", t.Phase, t.Duration.Round(10*time.Millisecond))
		}
	}
}

// start brings the platform up and returns how long it took.
func start(b *testing.B, ctx context.Context, cfg platform.Config) (time.Duration, *platform.Platform) {
	b.Helper()
	began := time.Now()
	p, err := platform.Up(ctx, cfg)
	if err != nil {
		b.Fatalf("failed to start the platform: %v", err)
	}
	return time.Since(began), p
}

// platformRSS sums VmRSS over the platform's live processes.
func platformRSS(p *platform.Platform) (int64, int) {
	var total int64
	n := 0
	for _, proc := range p.Processes() {
		if rss, err := platform.RSSBytes(proc.PID); err == nil {
			total += rss
			n++
		}
	}
	return total, n
}

// prepare creates the benchmark namespace, waits until Karmada has
// propagated it to every cell, and creates one policy per city.
func prepare(b *testing.B, ctx context.Context, hub client.Client, p *platform.Platform) {
	b.Helper()
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil {
		b.Fatal(err)
	}
	for _, c := range p.State().Clusters {
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{computev1alpha.CityCodeTopologyLabel: c.City}}
		policy := &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "city-" + strings.ToLower(c.City), Namespace: benchNamespace},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: selector}},
				Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: selector}},
			},
		}
		if err := hub.Create(ctx, policy); err != nil {
			b.Fatal(err)
		}
		cell := mustClient(b, p, c.Name)
		deadline := time.Now().Add(time.Minute)
		for {
			err := cell.Get(ctx, client.ObjectKey{Name: benchNamespace}, &corev1.Namespace{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("namespace %s never reached %s: %v", benchNamespace, c.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// propagate creates and deletes runs ConfigMaps for city in the hub, one at
// a time, and times each create until a watch on the cell sees it and each
// delete until the watch sees it go.
func propagate(b *testing.B, ctx context.Context, hub, cell client.WithWatch, city string, runs int) (create, del []time.Duration) {
	b.Helper()
	cw := &cellWatch{b: b, ctx: ctx, cell: cell}
	defer cw.stop()
	for i := range runs {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("bench-%s-%d", strings.ToLower(city), i), Namespace: benchNamespace,
				Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: city},
			},
			Data: map[string]string{"run": strconv.Itoa(i)},
		}
		cw.open()
		began := time.Now()
		if err := hub.Create(ctx, cm); err != nil {
			b.Fatal(err)
		}
		cw.wait(watch.Added, cm.Name)
		create = append(create, time.Since(began))

		began = time.Now()
		if err := hub.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
		cw.wait(watch.Deleted, cm.Name)
		del = append(del, time.Since(began))
	}
	return create, del
}

// cellWatch watches the benchmark namespace's ConfigMaps in a cell. A
// watch the apiserver ends (a shared machine's starved apiserver does) is
// opened again, and what it may have missed is read once.
type cellWatch struct {
	b    *testing.B
	ctx  context.Context
	cell client.WithWatch
	w    watch.Interface
}

// open starts the watch unless it runs.
func (cw *cellWatch) open() {
	if cw.w != nil {
		return
	}
	w, err := cw.cell.Watch(cw.ctx, &corev1.ConfigMapList{}, client.InNamespace(benchNamespace))
	if err != nil {
		cw.b.Fatal(err)
	}
	cw.w = w
}

// stop ends the watch.
func (cw *cellWatch) stop() {
	if cw.w != nil {
		cw.w.Stop()
		cw.w = nil
	}
}

// wait waits for an event of type t (Added or Deleted) about the named
// ConfigMap, for a minute at most.
func (cw *cellWatch) wait(t watch.EventType, name string) {
	cw.b.Helper()
	timeout := time.After(time.Minute)
	for {
		cw.open()
		select {
		case ev, ok := <-cw.w.ResultChan():
			if !ok {
				cw.w = nil
				cw.open()
				// The new watch starts from now: the state read after it
				// opened tells whether the event came in between.
				err := cw.cell.Get(cw.ctx, client.ObjectKey{Namespace: benchNamespace, Name: name}, &corev1.ConfigMap{})
				if (t == watch.Added && err == nil) || (t == watch.Deleted && apierrors.IsNotFound(err)) {
					return
				}
				continue
			}
			if obj, isObj := ev.Object.(client.Object); isObj && ev.Type == t && obj.GetName() == name {
				return
			}
		case <-timeout:
			cw.b.Fatalf("no %s event for %s in %s within a minute", t, name, benchNamespace)
		}
	}
}

// mustClient returns a client of a plane.
func mustClient(b *testing.B, p *platform.Platform, plane string) client.WithWatch {
	b.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	if err := policyv1alpha1.Install(s); err != nil {
		b.Fatal(err)
	}
	c, err := client.NewWithWatch(p.Config(plane), client.Options{Scheme: s})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// percentile returns the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1].Round(time.Millisecond / 10)
}

// report prints one line of figures to stdout, which a benchmark run shows
// in full.
func report(format string, args ...any) {
	fmt.Printf("platform: "+format+"\n", args...)
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
