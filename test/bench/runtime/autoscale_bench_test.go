//go:build bench

package runtime

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/bench/internal/procstat"
)

// BenchmarkAutoscale times a load step to a new replica serving, for a
// Workload that autoscales (1–4 instances at 50 % CPU in DFW) against a
// plain Deployment with the same HorizontalPodAutoscaler, on the same real
// node, in the same run. Each side starts at one replica with its
// autoscaler reading metrics; the clock starts when the one container is
// asked to burn a core (the demo's /burn) and stops when a second Pod of
// the side answers HTTP on :8080, which is what a user's client sees; for
// compute it also stops, separately, when the project shows a second
// Instance Available (what `datumctl-compute instances` shows). Both sides
// wait on the same cell HPA controller (5 s sync) and metrics-server
// (15 s resolution), whose phase against the load step is not controlled:
// a single run varies by up to one scrape period. Quota on, warm (the
// image is pulled by a first replica before the clock starts).
//
//	go test -tags bench -run '^$' -bench Autoscale -benchtime 1x -timeout 30m ./test/bench/runtime/
func BenchmarkAutoscale(b *testing.B) {
	p := sharedPlatform(b)
	e := newEnv(b, p)
	image := p.State().Registry + "/" + platform.DemoImage
	dep := e.autoscaleDeployment(b, "bench-hpa-deployment", image)
	serving, available := e.autoscaleWorkload(b, "bench-hpa-workload", image)
	load := procstat.LoadAverage()
	fmt.Printf("\nAutoscale: a load step (one core burnt in the one replica) → a second replica serving, 1–4 at 50 %% CPU, one real node (2 cores), quota on, warm, load average %s\n", load)
	fmt.Printf("  Deployment + HPA → second Pod answers HTTP:                   %8s\n", dep.Round(time.Millisecond))
	fmt.Printf("  Workload (autoscaled) → second instance answers HTTP:         %8s   %.2f× the Deployment\n", serving.Round(time.Millisecond), ratio(serving, dep))
	fmt.Printf("  Workload (autoscaled) → second instance Available (project):  %8s   %.2f× the Deployment\n", available.Round(time.Millisecond), ratio(available, dep))
	b.ReportMetric(dep.Seconds(), "deployment-s")
	b.ReportMetric(serving.Seconds(), "workload-serving-s")
	b.ReportMetric(ratio(serving, dep), "ratio-x")
}

// cpuMetric is 50 % average CPU utilization, the autoscalers' target.
func cpuMetric() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))},
	}}
}

// autoscaleDeployment runs the baseline: a Deployment of one Pod and an
// HPA on it in the cell; it returns the load step's time to a second Pod
// serving, and deletes the namespace.
func (e *env) autoscaleDeployment(b *testing.B, ns, image string) time.Duration {
	ctx := context.Background()
	cell := e.clients[planes[2]]
	must(b, cell.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app": "bench-hpa"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
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
	must(b, cell.Create(ctx, d))
	must(b, cell.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{cpuMetric()},
		},
	}))
	e.waitHPAActive(b, ns, "hello")
	took := e.loadStep(b, ns, nil)
	must(b, cell.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	e.waitGone(b, ns)
	return took
}

// autoscaleWorkload runs compute's side: a Workload of 1–4 instances at
// 50 % CPU in DFW; it returns the load step's time to a second instance
// serving and to a second Instance Available in the project, and deletes
// the Workload and the namespace.
func (e *env) autoscaleWorkload(b *testing.B, ns, image string) (serving, available time.Duration) {
	ctx := context.Background()
	project := e.clients[planes[0]]
	nsObj, cellNS := e.projectNamespace(b, ns)

	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: catalog.DefaultInstanceType},
		Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: image}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "default", CityCodes: []string{city},
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 1, MaxReplicas: ptr.To(int32(4)),
			Metrics: []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To(int32(50))},
			}}}}}}
	must(b, project.Create(ctx, w))
	wd := e.waitCellDeployment(b, cellNS)
	e.waitHPAActive(b, cellNS, wd)
	instances := e.watchInstances(b, ns)
	var began time.Time
	serving = e.loadStep(b, cellNS, func(t time.Time) { began = t })
	available = instances.waitReady(b, 2, began)
	instances.stop()
	must(b, project.Delete(ctx, w))
	e.waitNoPods(b, cellNS)
	must(b, project.Delete(ctx, nsObj))
	return serving, available
}

// waitCellDeployment waits for the one WorkloadDeployment of a cell
// namespace and returns its name.
func (e *env) waitCellDeployment(b *testing.B, ns string) string {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list := &computev1alpha.WorkloadDeploymentList{}
		if err := e.clients[planes[2]].List(context.Background(), list, client.InNamespace(ns)); err == nil && len(list.Items) == 1 {
			return list.Items[0].Name
		}
		if time.Now().After(deadline) {
			b.Fatalf("no WorkloadDeployment in the cell's %s after 5 minutes", ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitHPAActive waits until an HPA reads its metrics (ScalingActive True)
// and its one Pod is Ready, so the clock starts on a working autoscaler.
func (e *env) waitHPAActive(b *testing.B, ns, name string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		err := e.clients[planes[2]].Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, hpa)
		if err == nil && hpaActive(hpa) && len(e.servingPods(ns)) == 1 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the autoscaler %s/%s is not active after 5 minutes (%v): %+v", ns, name, err, hpa.Status.Conditions)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func hpaActive(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// loadStep burns a core in the namespace's one serving Pod and returns the
// time until a second Pod answers HTTP; began, when set, learns when the
// clock started.
func (e *env) loadStep(b *testing.B, ns string, began func(time.Time)) time.Duration {
	first := e.servingPods(ns)
	if len(first) != 1 {
		b.Fatalf("%d Pods serve in %s before the load, want 1", len(first), ns)
	}
	start := time.Now()
	if began != nil {
		began(start)
	}
	resp, err := http.Get("http://" + first[0] + ":8080/burn?seconds=300&cores=1") //nolint:noctx // a short request to a local container
	must(b, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("burn: %s, want 202", resp.Status)
	}
	deadline := start.Add(10 * time.Minute)
	for len(e.servingPods(ns)) < 2 {
		if time.Now().After(deadline) {
			b.Fatalf("no second Pod serves in %s 10 minutes after the load step", ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// servingPods returns the addresses of the namespace's Pods that answer
// HTTP on :8080.
func (e *env) servingPods(ns string) []string {
	list := &corev1.PodList{}
	if err := e.clients[planes[2]].List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return nil
	}
	hc := http.Client{Timeout: time.Second}
	var out []string
	for _, p := range list.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		resp, err := hc.Get("http://" + p.Status.PodIP + ":8080/healthz")
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			out = append(out, p.Status.PodIP)
		}
	}
	return out
}
