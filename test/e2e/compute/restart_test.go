//go:build e2e

package compute

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
)

func TestAManagementRestartMidRolloutConvergesWithoutDuplicates(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "survivor").withPlacement("edge", 3, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 6, ready: 6, desired: 6, updated: 6})
	wds := deploymentsOf(g, w)

	t.Log("a restart starts rolling the Instances of both cities")
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Metadata.Annotations = map[string]string{
			computev1alpha.RestartedAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
		}
	})
	g.Eventually(func(g Gomega) bool {
		for _, wd := range wds {
			cellWD := &computev1alpha.WorkloadDeployment{}
			g.Expect(cells[wd.Spec.CityCode].Get(context.Background(), client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, cellWD)).To(Succeed())
			if cellWD.Status.UpdatedReplicas > 0 && cellWD.Status.UpdatedReplicas < 3 {
				return true
			}
		}
		return false
	}).WithTimeout(chainWait).WithPolling(50 * time.Millisecond).Should(BeTrue())

	t.Log("the management manager dies mid-rollout and comes back a few seconds later")
	restartManagement(t, 3*time.Second)

	t.Log("the Workload converges: every Instance replaced once, no duplicates in any plane")
	expectAvailable(t, w, counts{deployments: 2, replicas: 6, ready: 6, desired: 6, updated: 6})
	g.Eventually(func(g Gomega) {
		g.Expect(deploymentsOf(g, w)).To(HaveLen(2))
		g.Expect(listed(g, hub, ns.hub, &computev1alpha.WorkloadDeploymentList{})).To(HaveLen(2))
		for _, wd := range deploymentsOf(g, w) {
			city := wd.Spec.CityCode
			g.Expect(wd.Status.ObservedGeneration).To(Equal(wd.Generation))
			cell := instancesIn(g, cells[city], ns.hub, wd.Name)
			g.Expect(ordinals(cell)).To(Equal(seq(3)), "Instances in %s", city)
			for _, inst := range cell {
				g.Expect(inst.Status.Controller).NotTo(BeNil())
				g.Expect(inst.Status.Controller.ObservedTemplateHash).To(Equal(wd.Status.TemplateHash))
			}
			g.Expect(ordinals(instancesIn(g, hub, ns.hub, wd.Name))).To(Equal(seq(3)), "written back from %s", city)
			projected := instancesIn(g, project, ns.name, wd.Name)
			g.Expect(ordinals(projected)).To(Equal(seq(3)), "projected from %s", city)
			for i := range projected {
				g.Expect(ready(&projected[i])).To(BeTrue())
				g.Expect(projected[i].Spec.Controller.TemplateHash).To(Equal(wd.Status.TemplateHash))
			}
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

// restartManagement kills the project's management compute-manager (its
// whole process group, like a crash) with the harness's fault controls,
// waits down, and starts it again with the same command line, waiting for
// /readyz. The new process is stopped with the platform.
func restartManagement(t *testing.T, down time.Duration) {
	t.Helper()
	name := "compute-manager-" + platform.ProjectPlane(platform.DefaultProject)
	if err := local.StopComponent(name, platform.StopOptions{Kill: true}); err != nil {
		t.Fatalf("failed to kill %s: %v", name, err)
	}
	time.Sleep(down)
	if err := local.StartComponent(t.Context(), name); err != nil {
		t.Fatalf("failed to start %s again: %v", name, err)
	}
}
