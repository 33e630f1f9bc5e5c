//go:build e2e

package runtime

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// Autoscaling bounds on the local platform (docs/local-platform.md): the
// cell's HPA controller syncs every 5 s and metrics-server scrapes the
// kubelet every 15 s, so a sustained load is seen within about 20 s and
// the new Instances start in seconds; the downscale stabilization window
// is 30 s. The waits below add a generous margin for a 2-core machine.
const (
	scaleOutWait = 2 * time.Minute
	scaleInWait  = 3 * time.Minute
	burnSeconds  = 75
)

// cpuAt50 is Datum's placement shape for "1 to max instances at 50 % CPU".
func cpuAt50(max int32) func(*computev1alpha.Workload) {
	return func(w *computev1alpha.Workload) {
		s := &w.Spec.Placements[0].ScaleSettings
		s.MaxReplicas = ptr.To(max)
		s.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To(int32(50))},
		}}}
	}
}

// TestAutoscalingOnRealMetrics is Datum's hpa-lifecycle and hpa-update on
// the real node, with a real load: a Workload at 1–4 instances and 50 %
// CPU gets one autoscaler in its city, owned by its deployment; a
// container that burns CPU makes it scale out, never above 4; the load
// stopping brings it back to 1 after the stabilization window; a new
// ceiling reaches the autoscaler; removing maxReplicas deletes it and the
// city returns to minReplicas.
func TestAutoscalingOnRealMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	w := clitest.NewWorkload("burn").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).
		Placement("default", 1, city).Edit(cpuAt50(4)).Build()
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "burn", "--timeout", "3m", "-y")

	t.Log("--- the city runs one autoscaler, owned by its deployment, and it is ready")
	wd := cellDeployment(g, ns.hub)
	g.Eventually(func(g Gomega) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		g.Expect(cell.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, hpa)).To(Succeed())
		g.Expect(metav1.IsControlledBy(hpa, wd)).To(BeTrue(), "the autoscaler is not controlled by its deployment")
		g.Expect(hpa.Spec.ScaleTargetRef.Kind).To(Equal("WorkloadDeployment"))
		g.Expect(hpa.Spec.ScaleTargetRef.Name).To(Equal(wd.Name))
		g.Expect(hpa.Spec.MinReplicas).To(HaveValue(BeEquivalentTo(1)))
		g.Expect(hpa.Spec.MaxReplicas).To(BeEquivalentTo(4))
		expectWorkloadCondition(g, ns.name, "burn", computev1alpha.ConditionAutoscalingReady, metav1.ConditionTrue)
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())

	t.Log("--- a sustained load: the city scales out, never above 4")
	var most atomic.Int32
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchMostInstances(watch, ns.hub, "burn", &most)
	pods := expectAvailable(t, ns.hub, "burn", 1)
	loaded := time.Now()
	burn(t, pods[0], burnSeconds)
	g.Eventually(func(g Gomega) {
		g.Expect(availableCount(g, ns.hub, "burn")).To(BeNumerically(">", 1))
	}).WithTimeout(scaleOutWait).WithPolling(poll).Should(Succeed(), "no Instance was added under load")
	t.Logf("a new Instance Available %s after the load began (load %s)", time.Since(loaded).Round(100*time.Millisecond), loadavg())
	status := u.run(cmdutil.ExitOK, "status", "burn", "-o", "json")
	g.Expect(status.Stdout).To(ContainSubstring(`"autoscaling"`))

	t.Log("--- the load stops: back to 1 after the stabilization window")
	g.Eventually(func(g Gomega) {
		g.Expect(workloadInstances(g, ns.hub, "burn")).To(HaveLen(1))
	}).WithTimeout(time.Duration(burnSeconds)*time.Second+scaleInWait).WithPolling(time.Second).Should(Succeed(), "the city did not scale back in")
	t.Logf("back to 1 Instance %s after the load began; at most %d at once", time.Since(loaded).Round(time.Second), most.Load())
	g.Expect(most.Load()).To(BeNumerically("<=", 4), "the city went above maxReplicas")
	g.Expect(most.Load()).To(BeNumerically(">", 1))

	t.Log("--- a new ceiling reaches the autoscaler")
	patchScale(g, ns.name, "burn", func(s *computev1alpha.HorizontalScaleSettings) { s.MaxReplicas = ptr.To(int32(3)) })
	g.Eventually(func(g Gomega) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		g.Expect(cell.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, hpa)).To(Succeed())
		g.Expect(hpa.Spec.MaxReplicas).To(BeEquivalentTo(3))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())

	t.Log("--- autoscaling removed: the autoscaler goes, the city returns to minReplicas")
	patchScale(g, ns.name, "burn", func(s *computev1alpha.HorizontalScaleSettings) {
		s.MaxReplicas, s.Metrics, s.MinReplicas = nil, nil, 2
	})
	g.Eventually(func(g Gomega) {
		err := cell.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, &autoscalingv2.HorizontalPodAutoscaler{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the autoscaler is still there: %v", err)
		g.Expect(availableCount(g, ns.hub, "burn")).To(Equal(2))
		got := &computev1alpha.Workload{}
		g.Expect(project.Get(ctx, client.ObjectKey{Namespace: ns.name, Name: "burn"}, got)).To(Succeed())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAutoscalingReady)).To(BeNil())
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	u.run(cmdutil.ExitOK, "destroy", "burn", "-y", "--wait", "--timeout", "3m")
}

// TestAStrayAutoscalerIsLeftAlone is Datum's hpa-stray: an autoscaler of
// the deployment's name that compute did not create is never adopted or
// changed, the Workload says so, and once it is gone compute creates its
// own.
func TestAStrayAutoscalerIsLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	w := clitest.NewWorkload("stray").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).
		Placement("default", 1, city).Build()
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "stray", "--timeout", "3m", "-y")
	wd := cellDeployment(g, ns.hub)
	stray := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.hub, Name: wd.Name, Labels: map[string]string{"owner": "someone-else"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "elsewhere"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 2,
		},
	}
	g.Expect(cell.Create(ctx, stray)).To(Succeed())

	t.Log("--- autoscaling asked: the stray is left alone and the Workload says so")
	g.Expect(patchWorkload(ctx, ns.name, "stray", cpuAt50(3))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := expectWorkloadCondition(g, ns.name, "stray", computev1alpha.ConditionAutoscalingReady, metav1.ConditionFalse)
		g.Expect(c.Reason).To(Equal(computev1alpha.ReasonAutoscalerNotOwned))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	time.Sleep(10 * time.Second) // several of the cell's and the HPA controller's syncs
	got := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(cell.Get(ctx, client.ObjectKeyFromObject(stray), got)).To(Succeed())
	g.Expect(got.OwnerReferences).To(BeEmpty(), "the stray was adopted")
	g.Expect(got.Spec.ScaleTargetRef).To(Equal(stray.Spec.ScaleTargetRef), "the stray was changed")
	g.Expect(got.Spec.MaxReplicas).To(BeEquivalentTo(2), "the stray was changed")
	g.Expect(got.Labels).To(HaveKeyWithValue("owner", "someone-else"))

	t.Log("--- the stray removed: compute creates its own")
	g.Expect(cell.Delete(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		g.Expect(cell.Get(ctx, client.ObjectKeyFromObject(stray), hpa)).To(Succeed())
		g.Expect(metav1.IsControlledBy(hpa, wd)).To(BeTrue())
		c := expectWorkloadCondition(g, ns.name, "stray", computev1alpha.ConditionAutoscalingReady, metav1.ConditionTrue)
		g.Expect(c.Reason).NotTo(Equal(computev1alpha.ReasonAutoscalerNotOwned))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	u.run(cmdutil.ExitOK, "destroy", "stray", "-y", "--wait", "--timeout", "3m")
}

// cellDeployment returns the only WorkloadDeployment of a cell namespace.
func cellDeployment(g Gomega, namespace string) *computev1alpha.WorkloadDeployment {
	list := &computev1alpha.WorkloadDeploymentList{}
	g.Expect(cell.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	return &list.Items[0]
}

// expectWorkloadCondition expects a condition of a project Workload to
// have status, and returns it.
func expectWorkloadCondition(g Gomega, namespace, name, conditionType string, status metav1.ConditionStatus) *metav1.Condition {
	w := &computev1alpha.Workload{}
	g.Expect(project.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, w)).To(Succeed())
	c := meta.FindStatusCondition(w.Status.Conditions, conditionType)
	g.Expect(c).NotTo(BeNil(), "the Workload has no %s condition", conditionType)
	g.Expect(c.Status).To(Equal(status), "%s: %s %s", conditionType, c.Reason, c.Message)
	return c
}

// patchWorkload edits a project Workload with a merge patch of what edit
// changes.
func patchWorkload(ctx context.Context, namespace, name string, edit func(*computev1alpha.Workload)) error {
	w := &computev1alpha.Workload{}
	if err := project.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, w); err != nil {
		return err
	}
	before := w.DeepCopy()
	edit(w)
	return project.Patch(ctx, w, client.MergeFrom(before))
}

// patchScale edits the scale settings of a Workload's first placement.
func patchScale(g Gomega, namespace, name string, edit func(*computev1alpha.HorizontalScaleSettings)) {
	g.Expect(patchWorkload(context.Background(), namespace, name, func(w *computev1alpha.Workload) {
		edit(&w.Spec.Placements[0].ScaleSettings)
	})).To(Succeed())
}

// workloadInstances lists the cell's Instances of a Workload.
func workloadInstances(g Gomega, namespace, workload string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(cell.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.WorkloadNameLabel: workload})).To(Succeed())
	return list.Items
}

// availableCount counts the cell's Available Instances of a Workload.
func availableCount(g Gomega, namespace, workload string) int {
	n := 0
	for _, inst := range workloadInstances(g, namespace, workload) {
		if available(&inst) {
			n++
		}
	}
	return n
}

// expectAvailable waits for n Available Instances of a Workload and
// returns their Pods.
func expectAvailable(t *testing.T, namespace, workload string, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	NewWithT(t).Eventually(func(g Gomega) {
		pods = nil
		for _, inst := range workloadInstances(g, namespace, workload) {
			g.Expect(available(&inst)).To(BeTrue(), "Instance %s is not Available", inst.Name)
			pod := &corev1.Pod{}
			g.Expect(cell.Get(context.Background(), client.ObjectKeyFromObject(&inst), pod)).To(Succeed())
			g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
			pods = append(pods, pod)
		}
		g.Expect(pods).To(HaveLen(n))
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return pods
}

// burn asks the demo container of pod to keep a core busy for seconds.
func burn(t *testing.T, pod *corev1.Pod, seconds int) {
	t.Helper()
	url := fmt.Sprintf("http://%s:8080/burn?seconds=%d&cores=1", pod.Status.PodIP, seconds)
	resp, err := http.Get(url) //nolint:noctx // a short request to a local container
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("GET %s: %s, want 202", url, resp.Status)
	}
}

// watchMostInstances records the most Instances of a Workload the cell
// holds at once until ctx ends.
func watchMostInstances(ctx context.Context, namespace, workload string, most *atomic.Int32) {
	for ctx.Err() == nil {
		list := &computev1alpha.InstanceList{}
		if cell.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{computev1alpha.WorkloadNameLabel: workload}) == nil {
			if n := int32(len(list.Items)); n > most.Load() {
				most.Store(n)
			}
		}
		time.Sleep(poll)
	}
}

// loadavg is the machine's load average, printed beside every figure.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
