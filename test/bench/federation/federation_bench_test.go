//go:build bench

// Package federation benchmarks compute end to end on the local platform
// (real Karmada, compute-manager in both roles, compute-quota granting the
// cells' claims, the simulated provider with no provisioning delay unless
// COMPUTE_BENCH_PROVIDER_DELAY says otherwise):
//
//   - P1, time to running, measured directly: a Parallel Workload of
//     3 cities × 2 replicas is created; the clock stops when watches have
//     seen all 6 Instances Ready in their cells, projected (Ready) into the
//     project and the Workload Available with 6 ready replicas for its
//     generation. p50/p99 over RUNS runs (default 30; COMPUTE_BENCH_RUNS
//     changes it), each Workload deleted (and gone from every plane)
//     before the next. The first run is reported on its own as well: the
//     first Workload of the platform (cold caches, connections and
//     policies); the others reuse the namespace (warm);
//   - raw Karmada, in the same run and observed the same way (watches of
//     the cells): three ConfigMaps (one per city) created in the hub until
//     each is in its cell — the propagation floor P1 is compared with
//     (ratio); and Karmada's round trip (rawRoundTrip): three Deployments
//     propagated, their status written in the cells by the benchmark,
//     until the hub shows it — the floor of P1's shape (ratio too);
//   - P1 with referenced data, in the same run: the same Workloads, each
//     mounting a Secret and reading a ConfigMap key as env, so their
//     companions travel to the hub and every cell and the Instances wait
//     behind the ReferencedData gate; p50/p99 and the ratio to P1;
//   - P2, status lag: the provider flips one Instance (the simulated
//     failure annotation on, then off); the clock stops when the Workload's
//     ready replicas show it. p50/p99 of both directions;
//   - where the time goes: per-hop medians of both, from watches on every
//     plane, the quota claim → grant → gate removal hops included.
//
// Run with:
//
//	go test -tags bench -run '^$' -bench Federation -benchtime 1x -timeout 30m ./test/bench/federation/
//
// Figures are printed and reported as benchmark metrics; nothing is
// asserted about them.
package federation

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/standin/simprovider"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

// Bench shape.
const (
	replicasPerCity = 2
	rawNamespace    = "bench-raw"
	runTimeout      = 2 * time.Minute
)

// benchCities are the cities of every Workload.
var benchCities = []string{"DFW", "LHR", "SIN"}

func BenchmarkFederation(b *testing.B) {
	runs := 30
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	dir, err := os.MkdirTemp("", "compute-bench-federation-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if b.Failed() {
			fmt.Fprintf(os.Stderr, "keeping the platform state for inspection: %s (logs in %s/logs)\n", dir, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delay := time.Duration(0)
	if v, err := time.ParseDuration(os.Getenv("COMPUTE_BENCH_PROVIDER_DELAY")); err == nil && v >= 0 {
		delay = v
	}
	loadBefore := procstat.LoadAverage()
	p, err := platform.Up(ctx, platform.Config{
		StateDir: dir, Cities: benchCities, Managers: platform.ManagersRequired, Log: os.Stderr,
		ProviderDelay: &delay,
		// COMPUTE_BENCH_MANAGER_BINARY runs that compute-manager (with
		// compute-quota next to it) instead of building this tree's.
		ManagerBinary: os.Getenv("COMPUTE_BENCH_MANAGER_BINARY"),
		// Enough for every run's Instances while the previous run's claims
		// are still being released.
		QuotaGrant: platform.QuotaGrant{Instances: 1000, VCPU: "1000", Memory: "2000Gi"},
	})
	if err != nil {
		b.Fatalf("failed to start the platform: %v", err)
	}
	defer p.Down()

	e := connect(b, p)
	t := newTracker()
	t.onTimeout = func() { e.dump(ctx) }
	e.track(b, ctx, t)
	rawAll, rawOne := e.rawPropagation(b, ctx, t, runs)
	roundTrip := e.rawRoundTrip(b, ctx, runs)

	p1, hops1 := e.timeToRunning(b, ctx, t, runs, false)
	fail, recover, hops2 := e.statusLag(b, ctx, t, runs)
	p1Data, _ := e.timeToRunning(b, ctx, t, runs, true)
	warm := p1
	if len(p1) > 1 {
		warm = p1[1:]
	}

	report("conditions: %d runs; simulated provider delay %s; %s; Parallel; %d CPUs; load average before %s, after %s",
		runs, delay, p.State().QuotaCondition(), runtime.NumCPU(), loadBefore, procstat.LoadAverage())
	report("  (a shared machine: compare the ratios to raw Karmada of the same run, not the seconds; p99 of %d runs is their maximum when runs < 100)", runs)
	report("raw Karmada (watched): 3 ConfigMaps (one per city) hub → all cells   p50 %s  p99 %s", pct(rawAll, 50), pct(rawAll, 99))
	report("raw Karmada (watched): one ConfigMap hub → its cell                    p50 %s  p99 %s", pct(rawOne, 50), pct(rawOne, 99))
	report("raw Karmada round trip (watched): 3 Deployments (one per city) hub → cells, status written there → all 3 report it in the hub   p50 %s  p99 %s", pct(roundTrip, 50), pct(roundTrip, 99))
	report("P1 Workload 3 cities × %d → 6 Ready, projected, Available, all runs   p50 %s  p99 %s  max %s  (ratio to raw 3-city propagation: p50 %.1fx, p99 %.1fx; to the raw round trip: p50 %.1fx, p99 %.1fx)",
		replicasPerCity, pct(p1, 50), pct(p1, 99), pct(p1, 100), ratio(p1, rawAll, 50), ratio(p1, rawAll, 99), ratio(p1, roundTrip, 50), ratio(p1, roundTrip, 99))
	report("P1 first Workload of the platform (cold)                               %s", p1[0].Round(time.Millisecond))
	report("P1 later Workloads, same namespace (warm)                              p50 %s  p99 %s", pct(warm, 50), pct(warm, 99))
	report("P1 with referenced data (a Secret mounted, a ConfigMap key as env: companions to the hub and 3 cells, the ReferencedData gate)  p50 %s  p99 %s  (ratio to P1 of the same run: p50 %.2fx, p99 %.2fx)",
		pct(p1Data, 50), pct(p1Data, 99), ratio(p1Data, p1, 50), ratio(p1Data, p1, 99))
	report("P2 status lag, provider fails an Instance → Workload shows it p50 %s  p99 %s", pct(fail, 50), pct(fail, 99))
	report("P2 status lag, provider recovers it → Workload shows it      p50 %s  p99 %s", pct(recover, 50), pct(recover, 99))
	report("P1 per hop (median of each hop's duration over the runs):")
	hops1.print()
	report("P2 per hop, failure (median):")
	hops2.print()
	b.ReportMetric(ms(pct(p1, 50)), "P1-p50-ms")
	b.ReportMetric(ms(pct(p1, 99)), "P1-p99-ms")
	b.ReportMetric(ms(pct(rawAll, 50)), "raw-p50-ms")
	b.ReportMetric(ms(pct(p1Data, 50)), "P1-data-p50-ms")
	b.ReportMetric(ratio(p1Data, p1, 50), "P1-data/P1-p50")
	b.ReportMetric(ratio(p1, rawAll, 50), "P1/raw-p50")
	b.ReportMetric(ms(pct(roundTrip, 50)), "raw-roundtrip-p50-ms")
	b.ReportMetric(ratio(p1, roundTrip, 50), "P1/raw-roundtrip-p50")
	b.ReportMetric(ms(pct(fail, 50)), "P2-fail-p50-ms")
	b.ReportMetric(ms(pct(fail, 99)), "P2-fail-p99-ms")
	b.ReportMetric(ms(pct(recover, 50)), "P2-recover-p50-ms")
	b.ReportMetric(ms(pct(recover, 99)), "P2-recover-p99-ms")
}

// env holds the clients of every plane.
type env struct {
	project, hub client.WithWatch
	cells        map[string]client.WithWatch
	// namespace is the project namespace of the Workloads, hubNamespace
	// the federation namespace it maps to.
	namespace, hubNamespace string
}

// connect creates the clients and reads the project namespace's UID.
func connect(b *testing.B, p *platform.Platform) *env {
	b.Helper()
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, computev1alpha.AddToScheme, quotav1alpha1.AddToScheme, policyv1alpha1.Install, workv1alpha2.Install} {
		if err := add(s); err != nil {
			b.Fatal(err)
		}
	}
	newClient := func(plane string) client.WithWatch {
		c, err := client.NewWithWatch(p.Config(plane), client.Options{Scheme: s})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	e := &env{
		project:   newClient(platform.ProjectPlane(platform.DefaultProject)),
		hub:       newClient(platform.HubPlane),
		cells:     map[string]client.WithWatch{},
		namespace: platform.BindingNamespace,
	}
	for _, c := range p.State().Clusters {
		e.cells[c.City] = newClient(c.Name)
	}
	ns := &corev1.Namespace{}
	if err := e.project.Get(context.Background(), client.ObjectKey{Name: e.namespace}, ns); err != nil {
		b.Fatal(err)
	}
	e.hubNamespace = names.FederationNamespace(ns.UID)
	return e
}

// track watches every stream the milestones read.
func (e *env) track(b *testing.B, ctx context.Context, t *tracker) {
	t.watch(ctx, b, e.project, projectWorkloads, &computev1alpha.WorkloadList{}, e.namespace)
	t.watch(ctx, b, e.project, projectDeployments, &computev1alpha.WorkloadDeploymentList{}, e.namespace)
	t.watch(ctx, b, e.project, projectInstances, &computev1alpha.InstanceList{}, e.namespace)
	t.watch(ctx, b, e.hub, hubDeployments, &computev1alpha.WorkloadDeploymentList{}, e.hubNamespace)
	t.watch(ctx, b, e.hub, hubInstances, &computev1alpha.InstanceList{}, e.hubNamespace)
	t.watch(ctx, b, e.project, projectClaims, &quotav1alpha1.ResourceClaimList{}, e.namespace)
	t.watch(ctx, b, e.hub, hubBindings, &workv1alpha2.ResourceBindingList{}, e.hubNamespace)
	for _, c := range e.cells {
		t.watch(ctx, b, c, cellConfigMaps, &corev1.ConfigMapList{}, rawNamespace)
		t.watch(ctx, b, c, cellDeployments, &computev1alpha.WorkloadDeploymentList{}, e.hubNamespace)
		t.watch(ctx, b, c, cellInstances, &computev1alpha.InstanceList{}, e.hubNamespace)
	}
}

// dump prints the hub copies, their bindings and the cells' deployments,
// for a measurement that timed out.
func (e *env) dump(ctx context.Context) {
	hubWDs := &computev1alpha.WorkloadDeploymentList{}
	if err := e.hub.List(ctx, hubWDs, client.InNamespace(e.hubNamespace)); err == nil {
		for _, wd := range hubWDs.Items {
			fmt.Fprintf(os.Stderr, "hub %s gen %d annotations %v status obsGen %d ready %d conds %+v\n",
				wd.Name, wd.Generation, wd.Annotations, wd.Status.ObservedGeneration, wd.Status.ReadyReplicas, wd.Status.Conditions)
		}
	}
	rbs := &workv1alpha2.ResourceBindingList{}
	if err := e.hub.List(ctx, rbs, client.InNamespace(e.hubNamespace)); err == nil {
		for _, rb := range rbs.Items {
			for _, s := range rb.Status.AggregatedStatus {
				raw := ""
				if s.Status != nil {
					raw = string(s.Status.Raw)
				}
				fmt.Fprintf(os.Stderr, "binding %s gen %d cluster %s applied %v status %s\n", rb.Name, rb.Generation, s.ClusterName, s.Applied, raw)
			}
		}
	}
	for city, c := range e.cells {
		wds := &computev1alpha.WorkloadDeploymentList{}
		if err := c.List(ctx, wds, client.InNamespace(e.hubNamespace)); err == nil {
			for _, wd := range wds.Items {
				fmt.Fprintf(os.Stderr, "cell %s %s gen %d annotations %v status obsGen %d ready %d\n",
					city, wd.Name, wd.Generation, wd.Annotations, wd.Status.ObservedGeneration, wd.Status.ReadyReplicas)
			}
		}
	}
}

// rawPropagation times, runs times, three ConfigMaps created at once in the
// hub (one per city, each routed by its city label) until watches of the
// cells have seen all of them, and the first of them until its cell has.
func (e *env) rawPropagation(b *testing.B, ctx context.Context, t *tracker, runs int) (all, one []time.Duration) {
	b.Helper()
	e.cityPolicies(b, ctx, rawNamespace, "v1", "ConfigMap")
	for _, city := range benchCities {
		waitFor(b, time.Minute, func() bool {
			return e.cells[city].Get(ctx, client.ObjectKey{Name: rawNamespace}, &corev1.Namespace{}) == nil
		})
	}
	for i := range runs {
		present := func(city string) func(v view) bool {
			name := rawConfigMap(city, i).Name
			return func(v view) bool { return v.named(cellConfigMaps, rawNamespace, name) != nil }
		}
		reached := t.measure(b, time.Minute, func() {
			for _, city := range benchCities {
				must(b, e.hub.Create(ctx, rawConfigMap(city, i)))
			}
		}, milestone{"first", present(benchCities[0])}, milestone{"all", func(v view) bool {
			for _, city := range benchCities {
				if !present(city)(v) {
					return false
				}
			}
			return true
		}})
		all = append(all, reached["all"])
		one = append(one, reached["first"])
	}
	return all, one
}

// rawConfigMap is the ConfigMap of run i for city.
func rawConfigMap(city string, i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("raw-%s-%d", strings.ToLower(city), i), Namespace: rawNamespace,
			Labels: map[string]string{computev1alpha.CityCodeTopologyLabel: city},
		},
		Data: map[string]string{"run": strconv.Itoa(i)},
	}
}

// timeToRunning measures P1 runs times.
func (e *env) timeToRunning(b *testing.B, ctx context.Context, t *tracker, runs int, withData bool) (totals []time.Duration, h hops) {
	b.Helper()
	h = newHops(p1Hops)
	if withData {
		e.referencedData(b, ctx)
	}
	for i := range runs {
		w := e.workload(fmt.Sprintf("bench-%d", i))
		if withData {
			w = withReferencedData(e.workload(fmt.Sprintf("bench-data-%d", i)))
		}
		reached := t.measure(b, runTimeout, func() { must(b, e.project.Create(ctx, w)) }, runningMilestones(e.namespace, w.Name)...)
		total := slices.Max([]time.Duration{reached[msCellReady], reached[msProjected], reached[msWorkload]})
		totals = append(totals, total)
		h.add(reached)
		if i < runs-1 {
			e.deleteAndWait(b, ctx, t, w)
		}
	}
	return totals, h
}

// Milestone names.
const (
	msProjectWDs   = "project WorkloadDeployments created"
	msHubWDs       = "hub copies created"
	msBindings     = "Karmada bindings created"
	msScheduled    = "Karmada bindings scheduled"
	msApplied      = "Karmada bindings applied"
	msBindReport   = "Karmada bindings collected ready status"
	msCellWDs      = "cell WorkloadDeployments created"
	msCellCreated  = "cell Instances created"
	msClaims       = "quota claims created"
	msGranted      = "quota claims granted"
	msUngated      = "cell Instances ungated"
	msCellReady    = "cell Instances Ready"
	msWrittenBack  = "written-back Instances Ready"
	msProjected    = "projections Ready"
	msCellStatus   = "cell WorkloadDeployments report ready"
	msHubStatus    = "hub copies report ready (Karmada)"
	msProjStatus   = "project WorkloadDeployments report ready"
	msWorkload     = "Workload Available"
	msFlipCell     = "cell Instance flipped"
	msFlipHub      = "written-back Instance flipped"
	msFlipProj     = "projection flipped"
	msFlipCellWD   = "cell WorkloadDeployment counts it"
	msFlipHubWD    = "hub copy counts it (Karmada)"
	msFlipProjWD   = "project WorkloadDeployment counts it"
	msFlipWorkload = "Workload counts it"
)

// runningMilestones are P1's milestones for Workload w.
func runningMilestones(namespace, w string) []milestone {
	n := len(benchCities)
	all := n * replicasPerCity
	label := computev1alpha.WorkloadNameLabel
	return []milestone{
		{msProjectWDs, func(v view) bool { return len(v.of(projectDeployments, label, w)) == n }},
		{msHubWDs, func(v view) bool { return len(v.of(hubDeployments, label, w)) == n }},
		{msBindings, func(v view) bool { return len(bindings(v, w)) == n }},
		{msScheduled, func(v view) bool {
			return bindingsHold(v, w, n, func(rb *workv1alpha2.ResourceBinding) bool { return len(rb.Spec.Clusters) > 0 })
		}},
		{msCellWDs, func(v view) bool { return len(v.of(cellDeployments, label, w)) == n }},
		{msApplied, func(v view) bool { return bindingsHold(v, w, n, bindingApplied) }},
		{msBindReport, func(v view) bool { return bindingsHold(v, w, n, bindingReports(replicasPerCity)) }},
		{msCellCreated, func(v view) bool { return len(v.of(cellInstances, label, w)) == all }},
		{msClaims, func(v view) bool { return claims(v, namespace, w, false) == all }},
		{msGranted, func(v view) bool { return claims(v, namespace, w, true) == all }},
		{msUngated, func(v view) bool { return ungated(v.of(cellInstances, label, w)) == all }},
		{msCellReady, func(v view) bool { return readyInstances(v.of(cellInstances, label, w)) == all }},
		{msWrittenBack, func(v view) bool { return readyInstances(v.of(hubInstances, label, w)) == all }},
		{msProjected, func(v view) bool { return readyInstances(v.of(projectInstances, label, w)) == all }},
		{msCellStatus, func(v view) bool { return deploymentsReady(v.of(cellDeployments, label, w), n, replicasPerCity) }},
		{msHubStatus, func(v view) bool { return deploymentsReady(v.of(hubDeployments, label, w), n, replicasPerCity) }},
		{msProjStatus, func(v view) bool { return deploymentsReady(v.of(projectDeployments, label, w), n, replicasPerCity) }},
		{msWorkload, func(v view) bool {
			wl, ok := v.named(projectWorkloads, namespace, w).(*computev1alpha.Workload)
			return ok && wl != nil && wl.Status.ObservedGeneration == wl.Generation &&
				meta.IsStatusConditionTrue(wl.Status.Conditions, computev1alpha.ConditionAvailable) &&
				wl.Status.ReadyReplicas == int32(all)
		}},
	}
}

// p1Hops are the hops of P1, each from one milestone to another.
var p1Hops = []hop{
	{"Workload created → project WDs (WorkloadReconciler)", "", msProjectWDs},
	{"project WDs → hub copies (federator)", msProjectWDs, msHubWDs},
	{"hub copies → cell WDs (Karmada propagation)", msHubWDs, msCellWDs},
	{"  hub copies → bindings created (Karmada detector)", msHubWDs, msBindings},
	{"  bindings created → scheduled (karmada-scheduler)", msBindings, msScheduled},
	{"  scheduled → cell WDs (binding controller, Work, execution)", msScheduled, msCellWDs},
	{"  cell WDs → bindings say applied (work status)", msCellWDs, msApplied},
	{"cell WDs → all Instances created (WD controller)", msCellWDs, msCellCreated},
	{"Instances created → claims created (Instance controller)", msCellCreated, msClaims},
	{"claims created → claims granted (compute-quota)", msClaims, msGranted},
	{"claims granted → Instances ungated (Instance controller)", msGranted, msUngated},
	{"Instances ungated → Instances Ready (provider + Instance controller)", msUngated, msCellReady},
	{"cell WDs → all Instances Ready (cell, in all)", msCellWDs, msCellReady},
	{"cell Instances Ready → written back Ready (write-back)", msCellReady, msWrittenBack},
	{"written back → projections Ready (projector)", msWrittenBack, msProjected},
	{"cell Instances Ready → cell WDs report it (WD controller)", msCellReady, msCellStatus},
	{"cell WDs report → hub copies report (Karmada status)", msCellStatus, msHubStatus},
	{"  cell WDs report → bindings collect it (work status controller)", msCellStatus, msBindReport},
	{"  bindings collect → hub copies report (aggregation)", msBindReport, msHubStatus},
	{"hub copies report → project WDs report (federator mirror)", msHubStatus, msProjStatus},
	{"project WDs report → Workload Available (WorkloadReconciler)", msProjStatus, msWorkload},
}

// workload returns a Workload of 2 replicas in each bench city.
func (e *env) workload(name string) *computev1alpha.Workload {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, Name: name}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
		}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: "edge", CityCodes: benchCities, ScaleSettings: computev1alpha.HorizontalScaleSettings{
			MinReplicas: replicasPerCity, InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy,
		},
	}}
	return w
}

// The referenced data of P1's variant: a Secret and a ConfigMap of the
// bench namespace.
const (
	benchSecret    = "bench-db"
	benchConfigMap = "bench-app"
)

// referencedData creates the Secret and ConfigMap the referenced-data
// Workloads read.
func (e *env) referencedData(b *testing.B, ctx context.Context) {
	b.Helper()
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, Name: benchSecret}, StringData: map[string]string{"password": "bench"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, Name: benchConfigMap}, Data: map[string]string{"mode": "bench"}},
	} {
		if err := e.project.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
}

// withReferencedData makes w mount the bench Secret and read a key of the
// bench ConfigMap as env.
func withReferencedData(w *computev1alpha.Workload) *computev1alpha.Workload {
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: benchSecret}}}
	c := &spec.Runtime.Sandbox.Containers[0]
	mount := "/etc/db"
	c.VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: &mount}}
	c.Env = []computev1alpha.EnvVar{{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: benchConfigMap}, Key: "mode"}}}}
	return w
}

// deleteAndWait deletes a Workload and waits until nothing of it is left
// in any plane.
func (e *env) deleteAndWait(b *testing.B, ctx context.Context, t *tracker, w *computev1alpha.Workload) {
	b.Helper()
	label := computev1alpha.WorkloadNameLabel
	t.measure(b, runTimeout, func() { must(b, client.IgnoreNotFound(e.project.Delete(ctx, w))) }, milestone{"gone", func(v view) bool {
		for _, s := range []stream{projectDeployments, projectInstances, hubDeployments, hubInstances, cellDeployments, cellInstances} {
			if len(v.of(s, label, w.Name)) > 0 {
				return false
			}
		}
		return true
	}})
}

// statusLag measures P2: runs flips of one Instance's provider state, off
// and on again, each until the Workload's ready replicas show it.
func (e *env) statusLag(b *testing.B, ctx context.Context, t *tracker, runs int) (fail, recover []time.Duration, h hops) {
	b.Helper()
	name := fmt.Sprintf("bench-%d", runs-1)
	wds := &computev1alpha.WorkloadDeploymentList{}
	must(b, e.project.List(ctx, wds, client.InNamespace(e.namespace), client.MatchingLabels{computev1alpha.WorkloadNameLabel: name}))
	slices.SortFunc(wds.Items, func(a, b computev1alpha.WorkloadDeployment) int { return strings.Compare(a.Name, b.Name) })
	h = newHops(p2Hops)
	all := int32(len(benchCities) * replicasPerCity)
	for i := range runs {
		wd := wds.Items[i%len(wds.Items)]
		inst := names.InstanceName(wd.Name, i%replicasPerCity)
		cell := e.cells[wd.Spec.CityCode]
		flip := func(reason string) func() {
			return func() {
				cur := &computev1alpha.Instance{}
				must(b, cell.Get(ctx, client.ObjectKey{Namespace: e.hubNamespace, Name: inst}, cur))
				before := cur.DeepCopy()
				if reason == "" {
					delete(cur.Annotations, simprovider.FailAnnotation)
				} else {
					metav1.SetMetaDataAnnotation(&cur.ObjectMeta, simprovider.FailAnnotation, reason)
				}
				must(b, cell.Patch(ctx, cur, client.MergeFrom(before)))
			}
		}
		reached := t.measure(b, runTimeout, flip(computev1alpha.ReasonInstanceCrashing),
			flipMilestones(e.hubNamespace, e.namespace, name, wd.Name, inst, false, all-1)...)
		fail = append(fail, reached[msFlipWorkload])
		h.add(reached)
		reached = t.measure(b, runTimeout, flip(""), flipMilestones(e.hubNamespace, e.namespace, name, wd.Name, inst, true, all)...)
		recover = append(recover, reached[msFlipWorkload])
	}
	return fail, recover, h
}

// flipMilestones follow one Instance's Ready flip up to the Workload.
func flipMilestones(hubNS, projectNS, workload, wd, inst string, ready bool, total int32) []milestone {
	perCity := int32(replicasPerCity)
	if !ready {
		perCity--
	}
	readyIs := func(o client.Object) bool {
		r, ok := instanceReady(o)
		return ok && r == ready
	}
	return []milestone{
		{msFlipCell, func(v view) bool { return readyIs(v.named(cellInstances, hubNS, inst)) }},
		{msFlipHub, func(v view) bool { return readyIs(v.named(hubInstances, hubNS, inst)) }},
		{msFlipProj, func(v view) bool { return readyIs(v.named(projectInstances, projectNS, inst)) }},
		{msFlipCellWD, func(v view) bool { return deploymentReady(v.named(cellDeployments, hubNS, wd)) == perCity }},
		{msFlipHubWD, func(v view) bool { return deploymentReady(v.named(hubDeployments, hubNS, wd)) == perCity }},
		{msFlipProjWD, func(v view) bool { return deploymentReady(v.named(projectDeployments, projectNS, wd)) == perCity }},
		{msFlipWorkload, func(v view) bool {
			wl, ok := v.named(projectWorkloads, projectNS, workload).(*computev1alpha.Workload)
			return ok && wl != nil && wl.Status.ReadyReplicas == total
		}},
	}
}

// p2Hops are the hops of P2.
var p2Hops = []hop{
	{"annotation → cell Instance not Ready (provider + Instance controller)", "", msFlipCell},
	{"cell Instance → written back (write-back)", msFlipCell, msFlipHub},
	{"written back → projection (projector)", msFlipHub, msFlipProj},
	{"cell Instance → cell WD counts it (WD controller)", msFlipCell, msFlipCellWD},
	{"cell WD → hub copy counts it (Karmada status)", msFlipCellWD, msFlipHubWD},
	{"hub copy → project WD counts it (federator mirror)", msFlipHubWD, msFlipProjWD},
	{"project WD → Workload counts it (WorkloadReconciler)", msFlipProjWD, msFlipWorkload},
}

// hop is the time from one milestone to another ("" is the start).
type hop struct{ name, from, to string }

// hops collects each hop's duration over runs.
type hops struct {
	order []hop
	times map[string][]time.Duration
}

func newHops(order []hop) hops { return hops{order: order, times: map[string][]time.Duration{}} }

// add records one run's hops.
func (h hops) add(reached map[string]time.Duration) {
	for _, hp := range h.order {
		d := reached[hp.to] - reached[hp.from]
		h.times[hp.name] = append(h.times[hp.name], max(d, 0))
	}
}

// print reports each hop's median and p99.
func (h hops) print() {
	for _, hp := range h.order {
		report("  %-72s p50 %9s  p99 %9s", hp.name, pct(h.times[hp.name], 50), pct(h.times[hp.name], 99))
	}
}

// pct returns the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1].Round(time.Millisecond)
}

// ratio is a's p-th percentile over b's.
func ratio(a, b []time.Duration, p int) float64 {
	if pct(b, p) == 0 {
		return 0
	}
	return float64(pct(a, p)) / float64(pct(b, p))
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report prints one line of figures to stdout.
func report(format string, args ...any) {
	fmt.Printf("federation: "+format+"\n", args...)
}

// must fails the benchmark on an error.
func must(b *testing.B, err error) {
	b.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(b *testing.B, d time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("condition not met within %s", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cityPolicies creates hub namespace ns and in it one PropagationPolicy per
// bench city that sends the objects of kind (apiVersion) labelled with the
// city to the cells of that city, as compute's own do.
func (e *env) cityPolicies(b *testing.B, ctx context.Context, ns, apiVersion, kind string) {
	b.Helper()
	must(b, e.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, city := range benchCities {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{computev1alpha.CityCodeTopologyLabel: city}}
		must(b, e.hub.Create(ctx, &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "city-" + strings.ToLower(city), Namespace: ns},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: kind, LabelSelector: sel}},
				Placement: policyv1alpha1.Placement{
					ClusterAffinity:   &policyv1alpha1.ClusterAffinity{LabelSelector: sel},
					ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
				},
			},
		}))
	}
}

// statusOnArrival follows list's kind in namespace ns of cell c and, once
// for every object that appears there, writes patch(obj) to its status (a
// merge patch, in its own goroutine), as a controller of that cell would.
func statusOnArrival(ctx context.Context, b *testing.B, c client.WithWatch, list client.ObjectList, ns string, s *scaleWatch, patch func(client.Object) []byte) {
	b.Helper()
	written := map[string]bool{}
	follow(ctx, b, c, list, ns, func(obj client.Object, deleted bool) {
		if deleted || written[obj.GetName()] {
			return
		}
		written[obj.GetName()] = true
		obj = obj.DeepCopyObject().(client.Object)
		go func() {
			if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch(obj))); err != nil && ctx.Err() == nil {
				b.Errorf("failed to write the status of %s %s in its cell: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
		}()
	}, s)
}
