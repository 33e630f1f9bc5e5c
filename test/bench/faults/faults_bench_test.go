//go:build bench

// Package faults benchmarks recovery on the local platform: for each fault
// of the fault matrix (test/e2e/compute), injected in the middle of an image
// rollout of a Workload over 3 cities × 2, it measures
//
//   - the time from the heal (the component running again, the partition
//     lifted) until a user sees the rollout converged: the Workload Available
//     for its latest generation with every count at 6, and all 6 projections
//     Ready in the project at the new template — observed by polling the
//     project every 100 ms, as `datumctl-compute rollout status` would;
//   - the writes every plane's apiserver served in that time
//     (apiserver_request_total, write verbs), summed over project, hub and
//     cells: the price of recovering (a restarted apiserver's counters start
//     again at zero, which is why they are read after the heal). Leases and
//     Events are left out: leader election and the cells' heartbeats renew
//     whatever happens, and events are not state.
//
// Each fault runs COMPUTE_BENCH_FAULT_RUNS times (else COMPUTE_BENCH_RUNS,
// default 3) with a fresh
// Workload; p50 and max are printed per fault with the conditions (provider
// delay 2 s, quota on through compute-quota, the load average). Run with:
//
//	go test -tags bench -run '^$' -bench Faults -benchtime 1x -timeout 60m ./test/bench/faults/
//
// COMPUTE_BENCH_FAULTS=<substring> runs only the faults whose name contains
// it. Nothing is asserted about the figures.
package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/bench/internal/apimetrics"
	"github.com/citycells/compute/test/bench/internal/benchkit"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

var cities = []string{"DFW", "LHR", "SIN"}

// fault is one row: how to break the platform and how to heal it.
type fault struct {
	name   string
	inject func(ctx context.Context, p *platform.Platform) error
	heal   func(ctx context.Context, p *platform.Platform) error
}

func kill(component string) fault {
	return fault{
		name: "SIGKILL " + component,
		inject: func(_ context.Context, p *platform.Platform) error {
			if err := p.StopComponent(component, platform.StopOptions{Kill: true}); err != nil {
				return err
			}
			time.Sleep(3 * time.Second)
			return nil
		},
		heal: func(ctx context.Context, p *platform.Platform) error { return p.StartComponent(ctx, component) },
	}
}

func partition(city string, d time.Duration) fault {
	return fault{
		name: fmt.Sprintf("partition %s %s", city, d),
		inject: func(ctx context.Context, p *platform.Platform) error {
			if err := p.Partition(ctx, city, 0, faults.PartitionHang); err != nil {
				return err
			}
			time.Sleep(d)
			return nil
		},
		heal: func(ctx context.Context, p *platform.Platform) error { return p.Heal(ctx, city) },
	}
}

func BenchmarkFaults(b *testing.B) {
	runs := 3
	for _, env := range []string{"COMPUTE_BENCH_RUNS", "COMPUTE_BENCH_FAULT_RUNS"} {
		if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
			runs = v
		}
	}
	faults := []fault{
		kill("compute-manager-" + platform.ProjectPlane(platform.DefaultProject)),
		kill("compute-manager-" + platform.CellPlane("LHR")),
		kill("karmada-controller-manager"),
		kill("karmada-scheduler"),
		kill("kube-apiserver-hub"),
		kill("kube-apiserver-" + platform.CellPlane("LHR")),
		kill("compute-quota-" + platform.ProjectPlane(platform.DefaultProject)),
		kill("etcd"),
		partition("LHR", 30*time.Second),
	}
	if only := os.Getenv("COMPUTE_BENCH_FAULTS"); only != "" {
		faults = slices.DeleteFunc(faults, func(f fault) bool { return !strings.Contains(f.name, only) })
	}
	dir, err := os.MkdirTemp("", "compute-bench-faults-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	p, err := platform.Up(ctx, platform.Config{StateDir: dir, Log: os.Stderr, Cities: cities, Managers: platform.ManagersRequired})
	if err != nil {
		b.Fatalf("failed to start the platform: %v", err)
	}
	defer p.Down()
	project := benchkit.Client(b, p, platform.ProjectPlane(platform.DefaultProject), 0)
	ns := "bench-faults"
	benchkit.ProjectNamespace(b, ctx, project, ns, cities)

	type row struct {
		name      string
		converge  []time.Duration
		writes    []float64
		failedRun int
	}
	var rows []row
	n := 0
	for _, f := range faults {
		r := row{name: f.name}
		for range runs {
			n++
			w, err := startRollout(ctx, project, ns, fmt.Sprintf("fault-%d", n))
			if err != nil {
				b.Fatal(err)
			}
			if err := f.inject(ctx, p); err != nil {
				b.Fatalf("%s: %v", f.name, err)
			}
			if err := f.heal(ctx, p); err != nil {
				b.Fatalf("%s: heal: %v", f.name, err)
			}
			healed := time.Now()
			before := planeWrites(b, p)
			if err := waitConverged(ctx, project, w, 3*time.Minute); err != nil {
				b.Logf("%s: did not converge: %v", f.name, err)
				r.failedRun++
			} else {
				r.converge = append(r.converge, time.Since(healed))
				r.writes = append(r.writes, planeWrites(b, p)-before)
			}
			if err := project.Delete(ctx, w); err != nil {
				b.Fatal(err)
			}
			if err := waitGone(ctx, project, w, 3*time.Minute); err != nil {
				b.Fatalf("%s: %v", f.name, err)
			}
		}
		rows = append(rows, r)
	}

	benchkit.Report(b, "conditions: 3 cities x 2 replicas, image rollout (OrderedReady), simulated provider delay 2s, %s, "+
		"%d run(s) per fault, load average %s", p.State().QuotaCondition(), runs, procstat.LoadAverage())
	benchkit.Report(b, "%-48s %10s %10s %14s %s", "FAULT (mid image rollout)", "p50", "max", "writes p50", "not converged")
	for _, r := range rows {
		slices.Sort(r.converge)
		slices.Sort(r.writes)
		p50, worst, writes := benchkit.Pick(r.converge, 50), benchkit.Pick(r.converge, 100), benchkit.Pick(r.writes, 50)
		benchkit.Report(b, "%-48s %10s %10s %14.0f %d", r.name, p50.Round(100*time.Millisecond), worst.Round(100*time.Millisecond), writes, r.failedRun)
		key := strings.NewReplacer(" ", "-", "/", "-").Replace(r.name)
		b.ReportMetric(p50.Seconds(), key+"-converge-p50-s")
		b.ReportMetric(worst.Seconds(), key+"-converge-max-s")
		b.ReportMetric(writes, key+"-writes-p50")
	}
}

// startRollout creates a Workload of 2 replicas in each city, waits for it
// to converge, changes its image and returns once a cell has started the
// rollout (the project shows an Instance at the new template).
func startRollout(ctx context.Context, c client.Client, ns, name string) (*computev1alpha.Workload, error) {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
		}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: "edge", CityCodes: cities, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
	}}
	if err := c.Create(ctx, w); err != nil {
		return nil, err
	}
	if err := waitConverged(ctx, c, w, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("workload %s never became available: %w", name, err)
	}
	cur := &computev1alpha.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), cur); err != nil {
		return nil, err
	}
	cur.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
	if err := c.Update(ctx, cur); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		insts := &computev1alpha.InstanceList{}
		if err := c.List(ctx, insts, client.InNamespace(ns), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err == nil {
			for i := range insts.Items {
				if insts.Items[i].Spec.Runtime.Sandbox != nil && insts.Items[i].Spec.Runtime.Sandbox.Containers[0].Image == "ghcr.io/citycells/hello:2.0" {
					return cur, nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("the rollout of %s did not start", name)
}

// waitConverged polls until the Workload is Available for its generation
// with 6 of everything and its 6 projections are Ready at its template.
func waitConverged(ctx context.Context, c client.Client, w *computev1alpha.Workload, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "nothing read"
	for time.Now().Before(deadline) {
		ok, why := converged(ctx, c, w)
		if ok {
			return nil
		}
		last = why
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("after %s: %s", timeout, last)
}

func converged(ctx context.Context, c client.Client, w *computev1alpha.Workload) (bool, string) {
	cur := &computev1alpha.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), cur); err != nil {
		return false, err.Error()
	}
	st := cur.Status
	if st.ObservedGeneration != cur.Generation || !meta.IsStatusConditionTrue(st.Conditions, computev1alpha.ConditionAvailable) ||
		st.Replicas != 6 || st.ReadyReplicas != 6 || st.UpdatedReplicas != 6 || st.DesiredReplicas != 6 {
		return false, fmt.Sprintf("workload status %+v", st.ReplicaCounts)
	}
	image := cur.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image
	insts := &computev1alpha.InstanceList{}
	if err := c.List(ctx, insts, client.InNamespace(cur.Namespace), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(cur.UID)}); err != nil {
		return false, err.Error()
	}
	ready := 0
	for i := range insts.Items {
		in := &insts.Items[i]
		if in.DeletionTimestamp == nil && meta.IsStatusConditionTrue(in.Status.Conditions, computev1alpha.ConditionReady) &&
			in.Spec.Runtime.Sandbox != nil && in.Spec.Runtime.Sandbox.Containers[0].Image == image {
			ready++
		}
	}
	if ready != 6 || len(insts.Items) != 6 {
		return false, fmt.Sprintf("%d projections, %d ready at the current image", len(insts.Items), ready)
	}
	return true, ""
}

// waitGone waits until the Workload and its projections are gone.
func waitGone(ctx context.Context, c client.Client, w *computev1alpha.Workload, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		insts := &computev1alpha.InstanceList{}
		err := c.Get(ctx, client.ObjectKeyFromObject(w), &computev1alpha.Workload{})
		if client.IgnoreNotFound(err) == nil && err != nil {
			if c.List(ctx, insts, client.InNamespace(w.Namespace), client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}) == nil && len(insts.Items) == 0 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("workload %s was not cleaned up within %s", w.Name, timeout)
}

// planeWrites sums the write requests every plane's apiserver has served,
// but lease renewals and events.
func planeWrites(b *testing.B, p *platform.Platform) float64 {
	var total float64
	for _, pl := range p.State().Planes {
		cfg := rest.CopyConfig(p.Config(pl.Name))
		cfg.GroupVersion = &metav1.SchemeGroupVersion
		cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
		rc, err := rest.UnversionedRESTClientFor(cfg)
		if err != nil {
			b.Fatal(err)
		}
		s, err := apimetrics.Read(context.Background(), rc)
		if err != nil {
			b.Logf("no metrics from %s: %v", pl.Name, err)
			continue
		}
		total += apimetrics.Sum(s.Writes, apimetrics.NotLeaseOrEvent)
	}
	return total
}
