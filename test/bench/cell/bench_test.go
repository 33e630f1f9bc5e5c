//go:build bench

// Package cell benchmarks the cell role of compute-manager against the
// StatefulSet controller of kube-controller-manager on one real plane, in
// the same run:
//
//   - quota off: compute-manager (built from this repository and run as its
//     own process, cell role plus the simulated provider with no delay)
//     takes a Parallel WorkloadDeployment of N replicas to N Instances;
//   - quota on: the same, with claims made in a second plane (the
//     project's quota plane) where the quota service grants them;
//   - the StatefulSet controller creates the N Pods of a Parallel
//     StatefulSet (the plane has no nodes, so Pods never run: that side
//     times the creation of the Pod objects only).
//
// The clock starts when the WorkloadDeployment (StatefulSet) is created and
// stops when a watch of the benchmark's own has seen all N Instances Ready
// (all N Pods created), not on the status the controller under test
// writes. Writes are counted by the apiserver (apiserver_request_total)
// until the plane has been quiet for a second, broken down by verb and
// resource. Both managers get the same client rate limits.
//
// Run it with
//
//	go test -tags bench -run '^$' -bench Cell -benchtime 1x -timeout 30m ./test/bench/cell/
//
// COMPUTE_BENCH_REPLICAS sets N (default 1000); COMPUTE_BENCH_LOG=<dir>
// keeps compute-manager's logs there; COMPUTE_BENCH_PROFILE=<dir> writes a
// CPU profile of compute-manager there (cpu-quota-off.pprof, ...) covering
// COMPUTE_BENCH_PROFILE_SECONDS (default 30) from the timed create;
// COMPUTE_BENCH_MANAGER_BINARY runs that compute-manager instead of
// building this tree's. Nothing is asserted about the
// figures: they are printed with the conditions they were taken under (a
// shared machine's load average among them) and reported as metrics.
package cell

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/manager/quotaserver"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/planes"
	service "github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/bench/internal/apimetrics"
	"github.com/citycells/compute/test/bench/internal/procstat"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures"
)

// defaultReplicas is N unless COMPUTE_BENCH_REPLICAS says otherwise.
const defaultReplicas = 1000

// phaseTimeout bounds each phase; the benchmark fails past it.
const phaseTimeout = 5 * time.Minute

// Client rate limits of both managers (compute-manager's --kube-api-qps and
// --kube-api-burst, kube-controller-manager's): far above what the plane
// serves, so neither side is throttled on the client.
const (
	clientQPS   = 5000
	clientBurst = 10000
)

// Client rate limits of the quota service: compute-quota's defaults
// (--kube-api-qps, --kube-api-burst).
const (
	quotaQPS   = quotaserver.DefaultKubeAPIQPS
	quotaBurst = quotaserver.DefaultKubeAPIBurst
)

// Plane names.
const (
	cellPlane  = "cell"
	quotaPlane = "quota"
)

// cellName is the cell's --cell-name with quota on.
const cellName = "cell-bench"

func BenchmarkCell(b *testing.B) {
	replicas := envInt("COMPUTE_BENCH_REPLICAS", defaultReplicas)
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	loadBefore := procstat.LoadAverage()
	env := planes.StartForTest(b, planes.Options{
		Planes: []planes.PlaneSpec{
			{
				Name:                  cellPlane,
				Controllers:           []string{"statefulset", "garbagecollector"},
				ControllerManagerArgs: map[string]string{"kube-api-qps": strconv.Itoa(clientQPS), "kube-api-burst": strconv.Itoa(clientBurst)},
				CRDDirs:               []string{fixtures.CRDDir()},
			},
			{Name: quotaPlane, CRDDirs: []string{fixtures.ExternalCRDDir()}},
		},
		Log: io.Discard,
	})
	bin := buildManager(b)
	p := newPlane(b, env, bin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startQuotaService(b, ctx, env)

	b.ResetTimer()
	for i := range b.N {
		off := p.runCell(b, fmt.Sprintf("off-%d", i), replicas, false)
		on := p.runCell(b, fmt.Sprintf("on-%d", i), replicas, true)
		sts := p.runStatefulSet(b, fmt.Sprintf("sts-%d", i), replicas)
		b.StopTimer()
		report(b, replicas, loadBefore, off, on, sts)
		b.StartTimer()
	}
}

// plane is the cell plane under test and the quota plane.
type plane struct {
	env   *planes.Environment
	bin   string
	cell  client.WithWatch
	quota client.WithWatch
	// raw reach each plane's /metrics.
	raw map[string]rest.Interface
	// pids of the components whose CPU time is reported.
	pids map[string]int
}

func newPlane(b *testing.B, env *planes.Environment, bin string) *plane {
	p := &plane{env: env, bin: bin, raw: map[string]rest.Interface{}, pids: map[string]int{}}
	for _, name := range []string{cellPlane, quotaPlane} {
		cfg := env.Plane(name).Config()
		cfg.QPS, cfg.Burst = -1, 0
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: fixtures.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p.raw[name] = cs.Discovery().RESTClient()
		if name == cellPlane {
			p.cell = c
			// The catalog the cell sizes quota claims from, as an
			// operator publishes it.
			for _, it := range apitest.StandardInstanceTypes() {
				if err := c.Create(context.Background(), it.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		} else {
			p.quota = c
		}
	}
	for _, proc := range env.Processes() {
		switch proc.Name {
		case "etcd", "kube-apiserver-" + cellPlane, "kube-apiserver-" + quotaPlane, "kube-controller-manager-" + cellPlane:
			p.pids[proc.Name] = proc.PID
		}
	}
	return p
}

// result is what one side measured.
type result struct {
	name string
	// created is when the watch had seen every Instance (Pod); ready when
	// it had seen every Instance Ready (the clock), statusReady when the
	// WorkloadDeployment's status said so.
	created, ready, statusReady time.Duration
	// granted and ungated (quota on): every claim Granted, every Instance
	// without its Quota gate.
	granted, ungated time.Duration
	// writes are the write requests each plane's apiserver counted while
	// the side worked, until it went quiet, by "VERB resource[/sub]".
	writes, quotaWrites map[string]float64
	// cpu is the CPU time each component used until quiet.
	cpu map[string]time.Duration
	// rss is compute-manager's resident memory at the end.
	rss int64
}

// total sums a write breakdown.
func total(w map[string]float64) float64 { return apimetrics.Sum(w, nil) }

// runCell times compute-manager's cell role with quota off or on.
func (p *plane) runCell(b *testing.B, ns string, replicas int, quota bool) result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{
		"--enable-cell-controllers", "--runtime-provider=simulated", "--simulated-provider-delay=0s",
		"--kubeconfig=" + p.env.Plane(cellPlane).KubeconfigPath(),
		"--kube-api-qps=" + strconv.Itoa(clientQPS), "--kube-api-burst=" + strconv.Itoa(clientBurst),
		"--metrics-bind-address=0", "--leader-elect=false",
	}
	name := "quota off"
	if quota {
		name = "quota on"
		kubeconfig := filepath.Join(b.TempDir(), "quota.kubeconfig")
		if err := os.WriteFile(kubeconfig, p.env.Plane(quotaPlane).KubeconfigBytes(), 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "--quota-kubeconfig="+kubeconfig, "--cell-name="+cellName)
	}
	profileAddr := ""
	if os.Getenv("COMPUTE_BENCH_PROFILE") != "" {
		profileAddr = freeAddr(b)
		args = append(args, "--pprof-bind-address="+profileAddr)
	}
	mgr := p.startManager(b, ns, args)
	defer mgr.stop()

	// Warm up: one Instance to Ready proves the manager's caches are
	// synced and its controllers (and quota client) running.
	warm := p.namespace(b, ns+"-warmup", replicas+1, quota)
	w := newWatcher(b, ctx, p, warm, quota)
	must(b, p.cell.Create(ctx, workloadDeployment(warm, 1)))
	w.wait(b, func(s *watcher) bool { return s.readyCount() == 1 })
	p.settle(b)

	cellNS := p.namespace(b, ns, replicas, quota)
	w = newWatcher(b, ctx, p, cellNS, quota)
	before, quotaBefore, cpu := p.writes(b, cellPlane), p.writes(b, quotaPlane), p.cpu(mgr.pid)
	start := time.Now()
	profiled := profile(b, profileAddr, strings.ReplaceAll(name, " ", "-"))
	defer profiled()
	w.start(start, replicas)
	must(b, p.cell.Create(ctx, workloadDeployment(cellNS, replicas)))
	w.wait(b, func(s *watcher) bool { return s.readyCount() == replicas })
	w.wait(b, func(s *watcher) bool { return s.statusReady > 0 })
	p.settle(b)
	r := result{
		name:        name,
		writes:      apimetrics.Delta(p.writes(b, cellPlane), before),
		quotaWrites: apimetrics.Delta(p.writes(b, quotaPlane), quotaBefore),
		cpu:         p.cpuSince(mgr.pid, cpu),
		rss:         procstat.RSS(mgr.pid),
	}
	w.mu.Lock()
	r.created, r.ready, r.statusReady, r.granted, r.ungated = w.created, w.ready, w.statusReady, w.granted, w.ungated
	w.mu.Unlock()
	// The WorkloadDeployment's creation is the benchmark's write.
	r.writes["POST workloaddeployments"]--
	return r
}

// namespace creates a cell namespace; with quota, it belongs to a project
// of its own whose grant admits n Instances.
func (p *plane) namespace(b *testing.B, name string, n int, quota bool) string {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if quota {
		project := "p-" + name
		must(b, p.quota.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project}}))
		// The project runs in the cell's city (cell-bench: BENCH), so
		// compute-quota grants the cell's claims.
		must(b, clitest.BindCities(ctx, p.quota, project, service.CellCity(cellName)))
		amounts, err := service.ComputeGrant(int64(n), strconv.Itoa(n), strconv.Itoa(2*n)+"Gi")
		if err != nil {
			b.Fatal(err)
		}
		must(b, p.quota.Create(ctx, service.DefaultGrantFor(project, "compute", project, amounts)))
		ns.Labels = map[string]string{
			computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(project),
			computev1alpha.UpstreamNamespaceLabel:   project,
		}
	}
	must(b, p.cell.Create(ctx, ns))
	return name
}

// workloadDeployment is a Parallel WorkloadDeployment of n d1-standard-2
// Instances.
func workloadDeployment(ns string, n int) *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "bench", UID: types.UID("bench-" + ns)},
			PlacementName: "default",
			CityCode:      "DFW",
			Template: computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{
				Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
					Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
			}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              int32(n),
				InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy,
			},
		},
	}
}

// runStatefulSet times kube-controller-manager creating the Pods.
func (p *plane) runStatefulSet(b *testing.B, ns string, replicas int) result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must(b, p.cell.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app": "bench"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(replicas)),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			ServiceName:         "bench",
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	var start time.Time
	follow(ctx, p.cell, &corev1.PodList{}, ns, func(obj client.Object, deleted bool) {
		mu.Lock()
		defer mu.Unlock()
		seen[obj.GetName()] = true
		if len(seen) == replicas && done != nil {
			close(done)
			done = nil
		}
	})
	before, cpu := p.writes(b, cellPlane), p.cpu(0)
	start = time.Now()
	must(b, p.cell.Create(ctx, sts))
	select {
	case <-done:
	case <-time.After(phaseTimeout):
		b.Fatalf("the StatefulSet's Pods were not all created within %s", phaseTimeout)
	}
	elapsed := time.Since(start)
	p.settle(b)
	r := result{name: "StatefulSet", created: elapsed, ready: elapsed, writes: apimetrics.Delta(p.writes(b, cellPlane), before), cpu: p.cpuSince(0, cpu)}
	r.writes["POST statefulsets"]--
	return r
}

// watcher follows one cell namespace's Instances and WorkloadDeployment
// (and, with quota, its claims) and records when each milestone first
// held.
type watcher struct {
	mu    sync.Mutex
	began time.Time
	n     int
	// instance name → observed state.
	present, readyNames, ungatedNames, grantedNames map[string]bool
	created, ready, statusReady, granted, ungated   time.Duration
	changed                                         chan struct{}
}

func newWatcher(b *testing.B, ctx context.Context, p *plane, ns string, quota bool) *watcher {
	w := &watcher{
		present: map[string]bool{}, readyNames: map[string]bool{}, ungatedNames: map[string]bool{}, grantedNames: map[string]bool{},
		changed: make(chan struct{}, 1),
	}
	follow(ctx, p.cell, &computev1alpha.InstanceList{}, ns, func(obj client.Object, deleted bool) {
		inst := obj.(*computev1alpha.Instance)
		w.update(func() {
			if deleted {
				delete(w.present, inst.Name)
				delete(w.readyNames, inst.Name)
				return
			}
			w.present[inst.Name] = true
			if meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady) {
				w.readyNames[inst.Name] = true
			} else {
				delete(w.readyNames, inst.Name)
			}
			if inst.Spec.Controller == nil || !slices.ContainsFunc(inst.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
				return g.Name == computev1alpha.QuotaSchedulingGate
			}) {
				w.ungatedNames[inst.Name] = true
			}
		})
	})
	follow(ctx, p.cell, &computev1alpha.WorkloadDeploymentList{}, ns, func(obj client.Object, deleted bool) {
		wd := obj.(*computev1alpha.WorkloadDeployment)
		w.update(func() {
			want := wd.Spec.ScaleSettings.MinReplicas
			if w.statusReady == 0 && !w.began.IsZero() && want > 0 && wd.Status.ReadyReplicas == want && wd.Status.UpdatedReplicas == want {
				w.statusReady = time.Since(w.began)
			}
		})
	})
	if quota {
		follow(ctx, p.quota, &quotav1alpha1.ResourceClaimList{}, "p-"+ns, func(obj client.Object, deleted bool) {
			c := obj.(*quotav1alpha1.ResourceClaim)
			w.update(func() {
				if !deleted && meta.IsStatusConditionTrue(c.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted) {
					w.grantedNames[c.Name] = true
				}
			})
		})
	}
	return w
}

// start sets the clock and the number of Instances expected.
func (w *watcher) start(at time.Time, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.began, w.n = at, n
}

// update applies an observation and records milestones.
func (w *watcher) update(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
	if !w.began.IsZero() && w.n > 0 {
		elapsed := time.Since(w.began)
		set := func(d *time.Duration, ok bool) {
			if *d == 0 && ok {
				*d = elapsed
			}
		}
		set(&w.created, len(w.present) >= w.n)
		set(&w.ready, len(w.readyNames) >= w.n)
		set(&w.ungated, len(w.ungatedNames) >= w.n)
		set(&w.granted, len(w.grantedNames) >= w.n)
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *watcher) readyCount() int { return len(w.readyNames) }

// wait blocks until cond (called with w.mu held) holds, failing after
// phaseTimeout.
func (w *watcher) wait(b *testing.B, cond func(*watcher) bool) {
	b.Helper()
	timeout := time.After(phaseTimeout)
	for {
		w.mu.Lock()
		ok := cond(w)
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.changed:
		case <-time.After(time.Second):
		case <-timeout:
			w.mu.Lock()
			defer w.mu.Unlock()
			b.Fatalf("not done after %s: %d Instances, %d Ready, %d ungated, %d claims granted",
				phaseTimeout, len(w.present), len(w.readyNames), len(w.ungatedNames), len(w.grantedNames))
		}
	}
}

// follow watches list's kind in namespace until ctx ends, resuming from
// the last resourceVersion seen when the apiserver ends the watch; it
// returns once the first watch is open.
func follow(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, observe func(obj client.Object, deleted bool)) {
	opened := make(chan struct{})
	go func() {
		rv := ""
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if opened != nil {
				close(opened)
				opened = nil
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
					continue
				}
				rv = obj.GetResourceVersion()
				observe(obj, ev.Type == watch.Deleted)
			}
		}
	}()
	<-opened
}

// freeAddr returns a free loopback address.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// profile starts fetching a CPU profile from compute-manager's pprof
// endpoint at addr into COMPUTE_BENCH_PROFILE/cpu-<name>.pprof; the
// returned function waits for it. Without addr it does nothing.
func profile(b *testing.B, addr, name string) (wait func()) {
	if addr == "" {
		return func() {}
	}
	seconds := envInt("COMPUTE_BENCH_PROFILE_SECONDS", 30)
	path := filepath.Join(os.Getenv("COMPUTE_BENCH_PROFILE"), "cpu-"+name+".pprof")
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
		if err != nil {
			b.Errorf("CPU profile: %v", err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			b.Errorf("CPU profile: %v", err)
			return
		}
		fmt.Printf("    CPU profile of compute-manager (%s, %d s from the create): %s\n", name, seconds, path)
	}()
	return func() { <-done }
}

// managerProcess is a running compute-manager.
type managerProcess struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
}

// startManager runs compute-manager with args, its log in
// COMPUTE_BENCH_LOG or discarded.
func (p *plane) startManager(b *testing.B, name string, args []string) *managerProcess {
	out := io.Discard
	if dir := os.Getenv("COMPUTE_BENCH_LOG"); dir != "" {
		f, err := os.Create(filepath.Join(dir, "compute-manager-"+name+".log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = f.Close() })
		out = f
	}
	cmd := exec.Command(p.bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("failed to start compute-manager: %v", err)
	}
	m := &managerProcess{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(m.done) }()
	return m
}

// stop ends compute-manager: SIGTERM, then SIGKILL after 10 s.
func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// buildManager builds compute-manager from this repository, unless
// COMPUTE_BENCH_MANAGER_BINARY names one to run instead (to compare two
// versions with the same benchmark).
func buildManager(b *testing.B) string {
	if bin := os.Getenv("COMPUTE_BENCH_MANAGER_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "compute-manager")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/compute-manager")
	cmd.Dir = fixtures.RepoDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/compute-manager: %v\n%s", err, out)
	}
	return bin
}

// startQuotaService runs the quota service against the quota plane, as
// compute-quota does, in this process.
func startQuotaService(b *testing.B, ctx context.Context, env *planes.Environment) {
	cfg := env.Plane(quotaPlane).Config()
	cfg.QPS, cfg.Burst = quotaQPS, quotaBurst
	mgr, err := service.NewManager(ctx, cfg, manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: ctrl.Log.WithName("compute-quota"),
	}, service.Options{})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
}

// report prints every side and reports the figures as benchmark metrics.
func report(b *testing.B, n int, loadBefore string, off, on, sts result) {
	fmt.Printf("\ncell benchmark: %d replicas, Parallel, simulated provider delay 0, %d CPUs\n", n, runtime.NumCPU())
	fmt.Printf("  conditions: one plane (etcd + kube-apiserver + kube-controller-manager with statefulset,garbagecollector) and a quota plane;\n")
	fmt.Printf("    compute-manager %s, run as its own process, warm (one Instance taken to Ready before the clock);\n", managerSource())
	fmt.Printf("    the simulated provider's writes are counted with the cell's (with no delay it holds no finalizer);\n")
	fmt.Printf("    client limits of both managers: QPS %d, burst %d; quota service in the benchmark process (QPS %d, burst %d, as compute-quota);\n",
		clientQPS, clientBurst, quotaQPS, quotaBurst)
	fmt.Printf("    the cell's quota client: compute-manager's own limits to the quota plane;\n")
	fmt.Printf("    load average before: %s, after: %s (a shared machine: compare the ratio, not the seconds)\n", loadBefore, procstat.LoadAverage())
	fmt.Printf("  clock: from the create to a watch seeing all %d Instances Ready (all %d Pods created)\n", n, n)
	for _, r := range []result{off, on} {
		ratio := r.ready.Seconds() / sts.ready.Seconds()
		fmt.Printf("  cell, %-9s %6.2fs  ratio to StatefulSet %5.2fx  writes per Instance %.2f (cell apiserver)", r.name+":", r.ready.Seconds(), ratio, total(r.writes)/float64(n))
		if len(r.quotaWrites) > 0 {
			fmt.Printf(" + %.2f (quota plane)", total(r.quotaWrites)/float64(n))
		}
		fmt.Printf("\n    all created %.2fs", r.created.Seconds())
		if r.granted > 0 {
			fmt.Printf(", all claims granted %.2fs, all ungated %.2fs", r.granted.Seconds(), r.ungated.Seconds())
		}
		fmt.Printf(", all Ready %.2fs, WorkloadDeployment status says so %.2fs; compute-manager RSS %d MiB\n",
			r.ready.Seconds(), r.statusReady.Seconds(), r.rss>>20)
		printWrites("cell", r.writes, n)
		printWrites("quota plane", r.quotaWrites, n)
		key := strings.ReplaceAll(r.name, " ", "-")
		b.ReportMetric(r.ready.Seconds(), key+"-s")
		b.ReportMetric(ratio, key+"-ratio")
		b.ReportMetric(total(r.writes)/float64(n), key+"-writes/instance")
	}
	fmt.Printf("  StatefulSet:     %6.2fs  writes per Pod %.2f\n", sts.ready.Seconds(), total(sts.writes)/float64(n))
	printWrites("cell", sts.writes, n)
	fmt.Printf("  CPU time until quiet (quota off | quota on | StatefulSet):\n")
	keys := slices.Sorted(maps.Keys(off.cpu))
	for _, k := range keys {
		fmt.Printf("    %-36s %7.2fs | %7.2fs | %7.2fs\n", k, off.cpu[k].Seconds(), on.cpu[k].Seconds(), sts.cpu[k].Seconds())
	}
	fmt.Println()
	b.ReportMetric(sts.ready.Seconds(), "statefulset-s")
	b.ReportMetric(total(sts.writes)/float64(n), "writes/pod")
}

// managerSource says which compute-manager ran.
func managerSource() string {
	if bin := os.Getenv("COMPUTE_BENCH_MANAGER_BINARY"); bin != "" {
		return bin
	}
	return "built from this tree"
}

// printWrites prints a write breakdown.
func printWrites(plane string, w map[string]float64, n int) {
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if w[k] != 0 {
			fmt.Printf("      %-12s %-44s %6.0f  %.2f per replica\n", plane, k, w[k], w[k]/float64(n))
		}
	}
}

// settle waits until the cell apiserver has counted no write for a
// second, so trailing writes belong to the side that caused them.
func (p *plane) settle(b *testing.B) {
	last := total(p.writes(b, cellPlane))
	for range 60 {
		time.Sleep(time.Second)
		n := total(p.writes(b, cellPlane))
		if n == last {
			return
		}
		last = n
	}
}

// writes is what the plane's apiserver counted, by "VERB
// resource[/subresource]".
func (p *plane) writes(b *testing.B, name string) map[string]float64 {
	s, err := apimetrics.Read(context.Background(), p.raw[name])
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return s.Writes
}

// cpu returns the CPU time each component (and compute-manager, when
// running, and this process) has used so far.
func (p *plane) cpu(manager int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range p.pids {
		out[name] = procstat.CPU(pid)
	}
	out["compute-manager"] = 0
	if manager != 0 {
		out["compute-manager"] = procstat.CPU(manager)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["benchmark process (quota service, watches)"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return out
}

// cpuSince returns the CPU each component used since before.
func (p *plane) cpuSince(manager int, before map[string]time.Duration) map[string]time.Duration {
	out := p.cpu(manager)
	for k := range out {
		out[k] -= before[k]
	}
	return out
}

// envInt reads a positive integer from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// must fails the benchmark on an error.
func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
