//go:build bench

// Package runtime benchmarks compute on a real node against Kubernetes'
// own Deployment on the same node, in the same run: the local platform
// with one city, DFW, whose cell has a real node (containerd, runc, CNI,
// kubelet, kube-scheduler) and whose compute-manager runs the Kubernetes
// runtime provider.
//
//   - baseline: a Deployment of N Pods of the demo image (the same
//     requests and limits the provider gives an instance), created in the
//     cell; the clock stops when a watch of the benchmark's own has seen N
//     Pods Ready;
//   - compute: a Workload of N instances (policy Parallel, as a
//     Deployment creates its Pods) in the project; the clock stops when a
//     watch on the project plane has seen N Instances Available (what
//     `datumctl-compute instances` shows a user), and separately when N of
//     its Pods are Ready in the cell.
//
// Writes are counted by each plane's apiserver (apiserver_request_total)
// until the cell has been quiet for a second, per Pod and per Instance.
// Quota is on (the project's compute-quota grants every claim), the
// platform is warm (images already pulled by a first, untimed run of each
// side). Nothing is asserted about the figures.
//
//	go test -tags bench -run '^$' -bench Runtime -benchtime 1x -timeout 30m ./test/bench/runtime/
//
// COMPUTE_BENCH_PODS sets N (default 50).
package runtime

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/projects"
	"github.com/citycells/compute/test/bench/internal/apimetrics"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

const city = "DFW"

// planes are the planes whose writes are counted.
var planes = []string{platform.ProjectPlane(platform.DefaultProject), platform.HubPlane, platform.CellPlane(city)}

func BenchmarkRuntime(b *testing.B) {
	n := benchPods()
	p := sharedPlatform(b)
	e := newEnv(b, p)
	image := p.State().Registry + "/" + platform.DemoImage

	// A first, untimed round of each side pulls the image and warms every
	// cache; the second round is timed.
	var dep, cmp result
	for round := range 2 {
		dep = e.runDeployment(b, fmt.Sprintf("bench-deployment-%d", round), image, n)
		cmp = e.runWorkload(b, fmt.Sprintf("bench-workload-%d", round), image, n)
	}
	load := procstat.LoadAverage()
	fmt.Printf("\nRuntime: %d instances of %s on one real node (2 cores), quota on, warm, load average %s\n", n, platform.DemoImage, load)
	fmt.Printf("  Deployment of %d Pods → all Ready (cell watch):               %8s   %.2f writes per Pod (cell)\n",
		n, dep.ready.Round(time.Millisecond), dep.perObject(planes[2]))
	fmt.Printf("  Workload of %d instances → all Pods Ready (cell watch):         %8s   %.2f× the Deployment\n",
		n, cmp.podsReady.Round(time.Millisecond), ratio(cmp.podsReady, dep.ready))
	fmt.Printf("  Workload of %d instances → all Available in the project:        %8s   %.2f× the Deployment\n",
		n, cmp.ready.Round(time.Millisecond), ratio(cmp.ready, dep.ready))
	fmt.Printf("  writes per instance: project %.2f, hub %.2f, cell %.2f (of which Pods %.2f); the Deployment: %.2f per Pod\n",
		cmp.perObject(planes[0]), cmp.perObject(planes[1]), cmp.perObject(planes[2]), cmp.perResource(planes[2], "pods"), dep.perObject(planes[2]))
	for _, pl := range planes {
		printWrites("compute", pl, cmp.writes[pl], n)
	}
	printWrites("deployment", planes[2], dep.writes[planes[2]], n)
	b.ReportMetric(dep.ready.Seconds(), "deployment-s")
	b.ReportMetric(cmp.ready.Seconds(), "workload-available-s")
	b.ReportMetric(ratio(cmp.ready, dep.ready), "ratio-x")
}

// shared is the platform the package's benchmarks share: started by the
// first that runs, stopped by TestMain.
var shared struct {
	once sync.Once
	p    *platform.Platform
	dir  string
	err  error
}

// benchPods is N, COMPUTE_BENCH_PODS (default 50).
func benchPods() int {
	if v, err := strconv.Atoi(os.Getenv("COMPUTE_BENCH_PODS")); err == nil && v > 0 {
		return v
	}
	return 50
}

// sharedPlatform starts the local platform with DFW and its real node once
// for the package, with quota for 4N+10 instances.
func sharedPlatform(b *testing.B) *platform.Platform {
	if err := platform.NodePrerequisites(); err != nil {
		b.Fatalf("this benchmark needs a real node: %v", err)
	}
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "compute-bench-runtime-"); shared.err != nil {
			return
		}
		grant := 4*benchPods() + 10
		shared.p, shared.err = platform.Up(context.Background(), platform.Config{
			StateDir: shared.dir, Cities: []string{city}, Nodes: []string{city}, Managers: platform.ManagersRequired, Log: os.Stderr,
			QuotaGrant: platform.QuotaGrant{Instances: int64(grant), VCPU: strconv.Itoa(grant), Memory: strconv.Itoa(8*grant) + "Gi"},
		})
	})
	if shared.err != nil {
		b.Fatalf("failed to start the platform: %v", shared.err)
	}
	return shared.p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.p != nil {
		shared.p.Down()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// env holds the clients of the benchmark's planes.
type env struct {
	p       *platform.Platform
	clients map[string]client.WithWatch
	raw     map[string]*kubernetes.Clientset
}

func newEnv(b *testing.B, p *platform.Platform) *env {
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	utilruntime.Must(networkingv1alpha.AddToScheme(s))
	e := &env{p: p, clients: map[string]client.WithWatch{}, raw: map[string]*kubernetes.Clientset{}}
	for _, pl := range planes {
		cfg := p.Config(pl)
		cfg.QPS, cfg.Burst = 200, 400
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
		if err != nil {
			b.Fatal(err)
		}
		e.clients[pl] = c
		if e.raw[pl], err = kubernetes.NewForConfig(cfg); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// result is one timed run.
type result struct {
	n int
	// ready is when the run's objects were all ready as a user sees them;
	// podsReady when all Pods were Ready in the cell.
	ready, podsReady time.Duration
	writes           map[string]map[string]float64
}

func (r result) perObject(plane string) float64 {
	return apimetrics.Sum(r.writes[plane], apimetrics.NotLeaseOrEvent) / float64(r.n)
}

func (r result) perResource(plane, res string) float64 {
	return apimetrics.Sum(r.writes[plane], func(k string) bool { return apimetrics.Resource(k) == res }) / float64(r.n)
}

// runDeployment creates a Deployment of n Pods in the cell, times it to n
// Pods Ready, and deletes it.
func (e *env) runDeployment(b *testing.B, ns, image string, n int) result {
	ctx := context.Background()
	cell := e.clients[planes[2]]
	must(b, cell.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app": "bench"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false), EnableServiceLinks: ptr.To(false),
					Containers: []corev1.Container{{Name: "app", Image: image, Resources: instanceResources()}},
				},
			},
		},
	}
	w := e.watchPods(b, ns)
	before := e.writes(b)
	began := time.Now()
	must(b, cell.Create(ctx, d))
	ready := w.waitReady(b, n, began)
	e.settle(b)
	r := result{n: n, ready: ready, podsReady: ready, writes: e.since(b, before)}
	w.stop()
	must(b, cell.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	e.waitGone(b, ns)
	return r
}

// runWorkload creates a Workload of n instances in DFW in a new project
// namespace and times it to n Instances Available in the project (and n
// Pods Ready in the cell), then deletes it.
func (e *env) runWorkload(b *testing.B, ns, image string, n int) result {
	ctx := context.Background()
	project := e.clients[planes[0]]
	nsObj, cellNS := e.projectNamespace(b, ns)

	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: catalog.DefaultInstanceType},
		Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: image}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "default", CityCodes: []string{city},
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: int32(n),
			InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy}}}

	pods := e.watchPods(b, cellNS)
	instances := e.watchInstances(b, ns)
	before := e.writes(b)
	began := time.Now()
	must(b, project.Create(ctx, w))
	podsReady := pods.waitReady(b, n, began)
	ready := instances.waitReady(b, n, began)
	e.settle(b)
	r := result{n: n, ready: ready, podsReady: podsReady, writes: e.since(b, before)}
	pods.stop()
	instances.stop()
	must(b, project.Delete(ctx, w))
	e.waitNoPods(b, cellNS)
	must(b, project.Delete(ctx, nsObj))
	return r
}

// projectNamespace creates a project namespace bound to the city and
// returns it with the federation (and cell) namespace compute maps it to.
func (e *env) projectNamespace(b *testing.B, ns string) (*corev1.Namespace, string) {
	ctx := context.Background()
	project := e.clients[planes[0]]
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{projects.DefaultProjectLabel: platform.DefaultProject}}}
	must(b, project.Create(ctx, nsObj))
	bind := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(city), Namespace: ns}}
	bind.Spec.LocationRef = networkingv1alpha.LocationReference{Namespace: platform.LocationNamespace, Name: strings.ToLower(city)}
	must(b, project.Create(ctx, bind))
	meta.SetStatusCondition(&bind.Status.Conditions, metav1.Condition{Type: networkingv1alpha.LocationBindingConditionReady, Status: metav1.ConditionTrue, Reason: "Bench", Message: "bound by the benchmark"})
	must(b, project.Status().Update(ctx, bind))
	return nsObj, names.FederationNamespace(nsObj.UID)
}

// instanceResources are the requests and limits the provider gives an
// instance of the default type on the local platform.
func instanceResources() corev1.ResourceRequirements {
	cpu, mem := catalog.Size(apitest.StandardInstanceTypes().Find(catalog.DefaultInstanceType))
	ratio := int64(platform.NodeAllocationRatio)
	return corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu.MilliValue()/ratio, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem.Value()/ratio, resource.BinarySI),
		},
	}
}

// readyWatch follows objects of one namespace and records which are ready.
type readyWatch struct {
	mu     sync.Mutex
	ready  map[string]bool
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *env) watchPods(b *testing.B, ns string) *readyWatch {
	return e.follow(b, planes[2], ns, &corev1.PodList{}, func(obj client.Object) bool {
		p := obj.(*corev1.Pod)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	})
}

func (e *env) watchInstances(b *testing.B, ns string) *readyWatch {
	return e.follow(b, planes[0], ns, &computev1alpha.InstanceList{}, func(obj client.Object) bool {
		return meta.IsStatusConditionTrue(obj.(*computev1alpha.Instance).Status.Conditions, computev1alpha.ConditionAvailable)
	})
}

// follow watches list's kind in a namespace of a plane from now on.
func (e *env) follow(b *testing.B, plane, ns string, list client.ObjectList, ready func(client.Object) bool) *readyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	rw := &readyWatch{ready: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	wi, err := e.clients[plane].Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(rw.done)
		for ev := range wi.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rw.mu.Lock()
			rw.ready[obj.GetName()] = ev.Type != watch.Deleted && ready(obj)
			rw.mu.Unlock()
		}
	}()
	return rw
}

func (rw *readyWatch) count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, r := range rw.ready {
		if r {
			n++
		}
	}
	return n
}

// waitReady waits until n objects are ready and returns the time since
// began.
func (rw *readyWatch) waitReady(b *testing.B, n int, began time.Time) time.Duration {
	deadline := time.Now().Add(10 * time.Minute)
	for rw.count() < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d ready after 10 minutes", rw.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

func (rw *readyWatch) stop() {
	rw.cancel()
	<-rw.done
}

// waitNoPods waits until a cell namespace has no Pods.
func (e *env) waitNoPods(b *testing.B, ns string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list := &corev1.PodList{}
		err := e.clients[planes[2]].List(context.Background(), list, client.InNamespace(ns))
		if err == nil && len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("Pods of %s still there after 5 minutes (%v)", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitGone waits until a cell namespace and everything in it is gone, so
// its deletion is not counted against the next run.
func (e *env) waitGone(b *testing.B, ns string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := e.clients[planes[2]].Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("namespace %s of the cell still there after 5 minutes (%v)", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writes reads every plane's write counters.
func (e *env) writes(b *testing.B) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, pl := range planes {
		s, err := apimetrics.Read(context.Background(), e.raw[pl].CoreV1().RESTClient())
		if err != nil {
			b.Fatal(err)
		}
		out[pl] = s.Writes
	}
	return out
}

// since returns the writes each plane counted since before.
func (e *env) since(b *testing.B, before map[string]map[string]float64) map[string]map[string]float64 {
	after := e.writes(b)
	out := map[string]map[string]float64{}
	for _, pl := range planes {
		out[pl] = apimetrics.Delta(after[pl], before[pl])
	}
	return out
}

// settle waits until the cell apiserver has counted no write (but leases
// and events) for a second.
func (e *env) settle(b *testing.B) {
	count := func() float64 { return apimetrics.Sum(e.writes(b)[planes[2]], apimetrics.NotLeaseOrEvent) }
	last := count()
	for range 60 {
		time.Sleep(time.Second)
		n := count()
		if n == last {
			return
		}
		last = n
	}
}

func printWrites(side, plane string, w map[string]float64, n int) {
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if w[k] != 0 && apimetrics.NotLeaseOrEvent(k) {
			fmt.Printf("      %-10s %-16s %-44s %6.0f  %.2f per instance\n", side, plane, k, w[k], w[k]/float64(n))
		}
	}
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
