//go:build bench

// Package cell benchmarks the cell controllers against the StatefulSet
// controller of kube-controller-manager on one real plane. Run it with
//
//	go test -tags bench -run '^$' -bench . -benchtime 1x -timeout 15m ./test/bench/cell/
package cell

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/planes"
)

// replicas is the size of both workloads.
const replicas = 1000

// phaseTimeout bounds each phase; the benchmark fails past it.
const phaseTimeout = 3 * time.Minute

// BenchmarkCellControllersVersusStatefulSet times, on one plane, the cell
// controllers (WorkloadDeployment and Instance controllers plus the
// simulated provider with no delay) taking a Parallel WorkloadDeployment of
// 1,000 replicas to 1,000 Ready Instances, then kube-controller-manager's
// StatefulSet controller creating the 1,000 Pods of a Parallel StatefulSet.
// The plane has no nodes, so Pods never run: the StatefulSet side times
// the creation of the Pod objects only. Neither side is throttled on the
// client: the manager relies on the apiserver (QPS -1, as ctrl.GetConfig
// does) and kube-controller-manager gets a QPS far above what the plane
// serves.
func BenchmarkCellControllersVersusStatefulSet(b *testing.B) {
	// COMPUTE_BENCH_LOG=<file> keeps the manager's log.
	log := logr.Discard()
	if path := os.Getenv("COMPUTE_BENCH_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		log = funcr.New(func(prefix, args string) { _, _ = fmt.Fprintln(f, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
	env := planes.StartForTest(b, planes.Options{
		Planes: []planes.PlaneSpec{{
			Name:                  "bench",
			Controllers:           []string{"statefulset", "garbagecollector"},
			ControllerManagerArgs: map[string]string{"kube-api-qps": "5000", "kube-api-burst": "10000"},
			CRDDirs:               []string{crdDir()},
		}},
		Log: io.Discard,
	})
	cfg := env.Plane("bench").Config()
	cfg.QPS, cfg.Burst = -1, 0
	admin, err := client.NewWithWatch(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := &plane{cfg: cfg, admin: admin, raw: cs.Discovery().RESTClient(), pids: map[string]int{}}
	for _, proc := range env.Processes() {
		switch {
		case proc.Name == "etcd":
			p.pids["etcd"] = proc.PID
		case strings.HasPrefix(proc.Name, "kube-apiserver"):
			p.pids["kube-apiserver"] = proc.PID
		case strings.HasPrefix(proc.Name, "kube-controller-manager"):
			p.pids["kube-controller-manager"] = proc.PID
		}
	}
	b.ResetTimer()
	for i := range b.N {
		c := p.runCell(b, fmt.Sprintf("cell-%d", i))
		s := p.runStatefulSet(b, fmt.Sprintf("sts-%d", i))
		b.StopTimer()
		report(b, c, s)
		b.StartTimer()
	}
}

// plane is the plane under test.
type plane struct {
	cfg   *rest.Config
	admin client.WithWatch
	raw   rest.Interface
	// pids of the components whose CPU time is reported.
	pids map[string]int
}

// cpu returns the CPU time each component (and this process, "manager",
// which runs the cell controllers) has used so far.
func (p *plane) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range p.pids {
		out[name] = processCPU(pid)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["manager"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return out
}

// processCPU reads utime+stime of a process from /proc, in the kernel's
// 100 Hz ticks.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the line, 12 and 13 after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// cpuSince returns the CPU each component used since before.
func (p *plane) cpuSince(before map[string]time.Duration) map[string]time.Duration {
	out := p.cpu()
	for k := range out {
		out[k] -= before[k]
	}
	return out
}

// result is what one side measured.
type result struct {
	elapsed time.Duration
	// writes are the write requests the apiserver counted while the side
	// worked, until it went quiet.
	writes float64
	// byKind breaks the manager's own writes down (cell side only).
	byKind map[string]int
	// latency is the mean latency of each kind of write.
	latency map[string]time.Duration
	// cpu is the CPU time each component used.
	cpu map[string]time.Duration
}

// runCell times the cell controllers.
func (p *plane) runCell(b *testing.B, ns string) result {
	admin := p.admin
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter := &writeCounter{byKind: map[string]int{}, latency: map[string]time.Duration{}}
	mcfg := rest.CopyConfig(p.cfg)
	mcfg.Wrap(counter.wrap)
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := cell.Setup(mgr, cell.Options{}); err != nil {
		b.Fatal(err)
	}
	if err := cell.SetupSimulatedProvider(mgr, cell.SimOptions{Delay: 0, CIDR: "10.64.0.0/16"}); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			b.Error(err)
		}
	})
	defer wg.Wait()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the manager's cache did not sync")
	}
	createNamespace(b, admin, ns)

	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "bench", UID: "bench-workload"},
			PlacementName: "default",
			CityCode:      "DFW",
			Template: computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{
				Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
					Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
			}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              replicas,
				InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy,
			},
		},
	}
	before, cpu := p.apiserverWrites(b), p.cpu()
	start := time.Now()
	if err := admin.Create(ctx, wd); err != nil {
		b.Fatal(err)
	}
	waitFor(b, func() (watch.Interface, error) {
		return admin.Watch(ctx, &computev1alpha.WorkloadDeploymentList{}, client.InNamespace(ns))
	}, func(obj apiruntime.Object) bool {
		got := obj.(*computev1alpha.WorkloadDeployment)
		return got.Status.ReadyReplicas == replicas && got.Status.UpdatedReplicas == replicas
	})
	elapsed := time.Since(start)
	p.settle(b)
	r := result{elapsed: elapsed, writes: p.apiserverWrites(b) - before - 1, cpu: p.cpuSince(cpu)}
	r.byKind, r.latency = counter.snapshot()
	cancel()
	return r
}

// runStatefulSet times kube-controller-manager creating the Pods.
func (p *plane) runStatefulSet(b *testing.B, ns string) result {
	admin := p.admin
	ctx := context.Background()
	createNamespace(b, admin, ns)
	labels := map[string]string{"app": "bench"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](replicas),
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
	before, cpu := p.apiserverWrites(b), p.cpu()
	start := time.Now()
	if err := admin.Create(ctx, sts); err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	waitFor(b, func() (watch.Interface, error) {
		return admin.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	}, func(obj apiruntime.Object) bool {
		seen[obj.(*corev1.Pod).Name] = true
		return len(seen) == replicas
	})
	elapsed := time.Since(start)
	p.settle(b)
	return result{elapsed: elapsed, writes: p.apiserverWrites(b) - before - 1, cpu: p.cpuSince(cpu)}
}

// report prints both sides and reports the figures as benchmark metrics.
func report(b *testing.B, c, s result) {
	ratio := c.elapsed.Seconds() / s.elapsed.Seconds()
	own := 0
	for _, n := range c.byKind {
		own += n
	}
	fmt.Printf("\n%d replicas, one plane (etcd + kube-apiserver + kube-controller-manager with statefulset,garbagecollector), %d CPUs\n", replicas, runtime.NumCPU())
	fmt.Printf("  cell controllers, Parallel, provider delay 0:  %4d Instances created and Ready in %6.2fs\n", replicas, c.elapsed.Seconds())
	fmt.Printf("  StatefulSet controller, Parallel:              %4d Pods created in %6.2fs\n", replicas, s.elapsed.Seconds())
	fmt.Printf("    (the plane has no nodes, so Pods never run: this times the creation of the Pod objects only)\n")
	fmt.Printf("  ratio cell/StatefulSet:                        %.2fx\n", ratio)
	fmt.Printf("  writes per Instance:                           %.2f (apiserver count; the manager sent %d)\n", c.writes/replicas, own)
	for _, k := range slices.Sorted(maps.Keys(c.byKind)) {
		fmt.Printf("    %-32s %5d  %.2f per Instance, mean latency %s\n", k, c.byKind[k], float64(c.byKind[k])/replicas, c.latency[k].Round(time.Millisecond))
	}
	fmt.Printf("  writes per Pod (StatefulSet):                  %.2f (apiserver count)\n", s.writes/replicas)
	fmt.Printf("  CPU time used until quiet (cell | StatefulSet):\n")
	for _, k := range slices.Sorted(maps.Keys(c.cpu)) {
		fmt.Printf("    %-32s %7.2fs | %6.2fs\n", k, c.cpu[k].Seconds(), s.cpu[k].Seconds())
	}
	fmt.Println()
	b.ReportMetric(c.elapsed.Seconds(), "cell-s")
	b.ReportMetric(s.elapsed.Seconds(), "statefulset-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(c.writes/replicas, "writes/instance")
	b.ReportMetric(s.writes/replicas, "writes/pod")
}

// waitFor watches objects until done is true of one, failing after
// phaseTimeout. A watch the apiserver closes is opened again; its initial
// events repeat the objects that exist, so done must be idempotent.
func waitFor(b *testing.B, open func() (watch.Interface, error), done func(apiruntime.Object) bool) {
	timeout := time.After(phaseTimeout)
	for {
		w, err := open()
		if err != nil {
			b.Fatalf("failed to watch: %v", err)
		}
		for closed := false; !closed; {
			select {
			case ev, ok := <-w.ResultChan():
				closed = !ok
				if ok && ev.Type != watch.Error && done(ev.Object) {
					w.Stop()
					return
				}
			case <-timeout:
				w.Stop()
				b.Fatalf("not done after %s", phaseTimeout)
			}
		}
	}
}

// settle waits until the apiserver has counted no write for a second, so
// trailing writes (status, events) belong to the side that caused them.
func (p *plane) settle(b *testing.B) {
	last := p.apiserverWrites(b)
	for range 60 {
		time.Sleep(time.Second)
		n := p.apiserverWrites(b)
		if n == last {
			return
		}
		last = n
	}
}

// writeVerbs are the apiserver_request_total verbs that write.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

var verbLabel = regexp.MustCompile(`verb="([A-Z]+)"`)

// apiserverWrites sums apiserver_request_total over the write verbs.
func (p *plane) apiserverWrites(b *testing.B) float64 {
	body, err := p.raw.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("failed to read apiserver metrics: %v", err)
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		m := verbLabel.FindStringSubmatch(line)
		if m == nil || !writeVerbs[m[1]] {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

// createNamespace creates a namespace.
func createNamespace(b *testing.B, admin client.Client, name string) {
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatal(err)
	}
}

// writeCounter counts the manager's write requests by method and
// resource, and how long they took.
type writeCounter struct {
	mu      sync.Mutex
	byKind  map[string]int
	latency map[string]time.Duration
}

// wrap is a rest.Config WrapTransport that counts.
func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			verb := req.Method
			if strings.Contains(req.Header.Get("Content-Type"), "apply-patch") {
				verb = "APPLY"
			}
			kind := verb + " " + resourceOf(req.URL.Path)
			began := time.Now()
			resp, err := rt.RoundTrip(req)
			c.mu.Lock()
			c.byKind[kind]++
			c.latency[kind] += time.Since(began)
			c.mu.Unlock()
			return resp, err
		}
		return rt.RoundTrip(req)
	})
}

// snapshot returns the counts so far and the mean latency of each kind.
func (c *writeCounter) snapshot() (map[string]int, map[string]time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mean := map[string]time.Duration{}
	for k, n := range c.byKind {
		mean[k] = c.latency[k] / time.Duration(n)
	}
	return maps.Clone(c.byKind), mean
}

// resourceOf returns "resource" or "resource/subresource" of a request
// path.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			switch len(rest) {
			case 0:
				return "namespaces"
			case 1, 2:
				return rest[0]
			default:
				return rest[0] + "/" + rest[2]
			}
		}
	}
	return path
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newScheme returns a scheme with core and compute types.
func newScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	return s
}

// crdDir is config/crd/bases of this repository.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases")
}
