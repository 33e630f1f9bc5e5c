//go:build e2e

package runtime

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestProbesDecideReadinessOnTheRealNode: a readiness probe on a port the
// demo does not listen on keeps the Instance running but not Available,
// and the status says which probe; a probe the demo passes makes it
// Available; a liveness probe that fails makes the kubelet restart the
// container.
func TestProbesDecideReadinessOnTheRealNode(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	closed := &computev1alpha.Probe{TCPSocket: &computev1alpha.TCPSocketProbe{Port: intstr.FromInt32(9999)}, PeriodSeconds: 1, FailureThreshold: 1}
	w := clitest.NewWorkload("probed").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).
		Placement("default", 1, city).Edit(func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].ReadinessProbe = closed
	}).Build()
	g.Expect(project.Create(ctx, w)).To(Succeed())

	t.Log("--- a readiness probe that fails: running, not Available, and said so")
	g.Eventually(func(g Gomega) {
		list := workloadInstances(g, ns.hub, "probed")
		g.Expect(list).To(HaveLen(1))
		pod := &corev1.Pod{}
		g.Expect(cell.Get(ctx, client.ObjectKeyFromObject(&list[0]), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(available(&list[0])).To(BeFalse())
		g.Expect(u.runQuiet("instances", "--workload", "probed", "-o", "json", "--yes")).To(ContainSubstring("the readiness probe of container app does not pass"))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(availableCount(g, ns.hub, "probed")).To(BeZero(), "an instance whose readiness probe fails became Available")
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

	t.Log("--- a readiness probe the demo passes: Available")
	g.Expect(patchWorkload(ctx, ns.name, "probed", func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].ReadinessProbe = &computev1alpha.Probe{
			HTTPGet: &computev1alpha.HTTPGetProbe{Path: "/healthz", Port: intstr.FromString("http")}, PeriodSeconds: 1}
	})).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "probed", "--timeout", "3m", "-y")
	expectAvailable(t, ns.hub, "probed", 1)

	t.Log("--- a liveness probe that fails: the kubelet restarts the container")
	g.Expect(patchWorkload(ctx, ns.name, "probed", func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].LivenessProbe = closed
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		list := workloadInstances(g, ns.hub, "probed")
		g.Expect(list).NotTo(BeEmpty())
		restarts := int32(0)
		for _, inst := range list {
			pod := &corev1.Pod{}
			if cell.Get(ctx, client.ObjectKeyFromObject(&inst), pod) == nil && pod.Spec.Containers[0].LivenessProbe != nil {
				for _, cs := range pod.Status.ContainerStatuses {
					restarts += cs.RestartCount
				}
			}
		}
		g.Expect(restarts).To(BeNumerically(">", 0), "the container was never restarted")
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	u.run(cmdutil.ExitOK, "destroy", "probed", "-y", "--wait", "--timeout", "3m")
}
