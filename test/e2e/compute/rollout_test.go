//go:build e2e

package compute

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/standin/simprovider"
)

// imagesByCity returns the image each city's project WorkloadDeployment
// runs.
func imagesByCity(g Gomega, w *computev1alpha.Workload) map[string]string {
	out := map[string]string{}
	for _, wd := range deploymentsOf(g, w) {
		out[wd.Spec.CityCode] = wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image
	}
	return out
}

// rolloutStates returns each city's rollout state.
func rolloutStates(w *computev1alpha.Workload) map[string]computev1alpha.CityRolloutState {
	out := map[string]computev1alpha.CityRolloutState{}
	if w.Status.Rollout != nil {
		for _, c := range w.Status.Rollout.Cities {
			out[c.CityCode] = c.State
		}
	}
	return out
}

// unavailableCities counts the cities the Workload reports unavailable.
func unavailableCities(w *computev1alpha.Workload) int {
	n := 0
	for _, p := range w.Status.Placements {
		for _, c := range p.Cities {
			if !c.Available {
				n++
			}
		}
	}
	return n
}

func TestAGoodImageTravelsInWavesAndABadOneHaltsAfterTheFirstCity(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	b := makeWorkload(ns.name, "waves").withPlacement("edge", 1, "DFW", "LHR", "SIN")
	b.w.Spec.Rollout = &computev1alpha.WorkloadRollout{
		Strategy:    computev1alpha.WavesCityRollout,
		Waves:       []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR", "SIN"}}},
		SoakSeconds: ptr.To(int32(5)),
	}
	w := b.create(t)
	expectAvailable(t, w, counts{deployments: 3, replicas: 3, ready: 3, desired: 3, updated: 3})

	t.Log("a good image goes to DFW first; LHR and SIN keep 1.0 while DFW soaks")
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
	})
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(rolloutStates(got)).To(Equal(map[string]computev1alpha.CityRolloutState{
			"DFW": computev1alpha.CitySoaking, "LHR": computev1alpha.CityWaiting, "SIN": computev1alpha.CityWaiting}))
		g.Expect(imagesByCity(g, w)).To(Equal(map[string]string{
			"DFW": "ghcr.io/citycells/hello:2.0", "LHR": "ghcr.io/citycells/hello:1.0", "SIN": "ghcr.io/citycells/hello:1.0"}))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("after the soak LHR and SIN follow, and the rollout completes")
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(got.Status.Rollout.Phase).To(Equal(computev1alpha.RolloutPhaseComplete))
		g.Expect(imagesByCity(g, w)).To(Equal(map[string]string{
			"DFW": "ghcr.io/citycells/hello:2.0", "LHR": "ghcr.io/citycells/hello:2.0", "SIN": "ghcr.io/citycells/hello:2.0"}))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	expectAvailable(t, w, counts{deployments: 3, replicas: 3, ready: 3, desired: 3, updated: 3})

	t.Log("a bad image (the provider cannot pull it) halts after DFW")
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:bad"
		w.Spec.Template.Metadata.Annotations = map[string]string{simprovider.FailAnnotation: computev1alpha.ReasonImageUnavailable}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(got.Status.Rollout.Phase).To(Equal(computev1alpha.RolloutPhaseHalted))
		g.Expect(rolloutStates(got)["DFW"]).To(Equal(computev1alpha.CityHalted))
		prog := meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(prog).NotTo(BeNil())
		g.Expect(prog.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(prog.Reason).To(Equal(computev1alpha.ReasonRolloutHalted))
		g.Expect(prog.Message).To(And(ContainSubstring("edge/DFW"), ContainSubstring(computev1alpha.ReasonImageUnavailable)))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("LHR and SIN never leave 2.0 and at most one city is unavailable")
	g.Consistently(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(unavailableCities(got)).To(BeNumerically("<=", 1))
		images := imagesByCity(g, w)
		g.Expect(images["LHR"]).To(Equal("ghcr.io/citycells/hello:2.0"))
		g.Expect(images["SIN"]).To(Equal("ghcr.io/citycells/hello:2.0"))
	}).WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())

	t.Log("the CLI shows the halt and exits with failure, not timeout")
	user := newCLIUser(t, ns.name)
	halted := user.run(cmdutil.ExitFailure, "rollout", "status", "waves", "--watch=false", "--yes")
	g.Expect(halted.Stderr).To(ContainSubstring("halted in edge/DFW: ImageUnavailable"))

	t.Log("rollout undo (back to 2.0's template) restores DFW")
	user.run(cmdutil.ExitOK, "rollout", "undo", "waves", "--yes")
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(got.Status.Rollout.Phase).To(Equal(computev1alpha.RolloutPhaseComplete))
		g.Expect(imagesByCity(g, w)["DFW"]).To(Equal("ghcr.io/citycells/hello:2.0"))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	expectAvailable(t, w, counts{deployments: 3, replicas: 3, ready: 3, desired: 3, updated: 3})
}
