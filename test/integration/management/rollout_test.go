package management

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/workload"
	"github.com/citycells/compute/internal/revision"
)

// reportCity writes a WorkloadDeployment's status as its cell would for its
// current generation: every replica ready, or none with a failure reason.
func reportCity(t *testing.T, plane string, wd computev1alpha.WorkloadDeployment, ready bool, reason string) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := clients[plane].Get(context.Background(), client.ObjectKeyFromObject(&wd), cur); err != nil {
			return err
		}
		desired := cur.Spec.ScaleSettings.MinReplicas
		cur.Status.ObservedGeneration = cur.Generation
		cur.Status.ReplicaCounts = computev1alpha.ReplicaCounts{Replicas: desired, UpdatedReplicas: desired, DesiredReplicas: desired}
		avail := metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionFalse, Reason: reason,
			Message: "instance " + cur.Name + "-0: " + reason, ObservedGeneration: cur.Generation}
		rr := metav1.Condition{Type: computev1alpha.ConditionReplicasReady, Status: metav1.ConditionFalse, Reason: reason,
			Message: fmt.Sprintf("0 of %d replicas ready", desired), ObservedGeneration: cur.Generation}
		if ready {
			cur.Status.ReadyReplicas, cur.Status.CurrentReplicas = desired, desired
			avail.Status, avail.Reason, avail.Message = metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "all ready"
			rr.Status, rr.Reason, rr.Message = metav1.ConditionTrue, computev1alpha.ReasonAllReplicasReady, "all ready"
		}
		meta.SetStatusCondition(&cur.Status.Conditions, avail)
		meta.SetStatusCondition(&cur.Status.Conditions, rr)
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionProgressing,
			Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonRolloutComplete, Message: "done", ObservedGeneration: cur.Generation})
		return clients[plane].Status().Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

// images returns the image each city's deployment runs.
func images(g gomega.Gomega, plane string, w *computev1alpha.Workload) map[string]string {
	out := map[string]string{}
	for city, wd := range deploymentsOf(g, plane, w) {
		out[city] = wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image
	}
	return out
}

// setImage changes the Workload's image.
func setImage(t *testing.T, plane string, w *computev1alpha.Workload, image string) {
	update(t, plane, w, func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = image })
}

// cityStates returns the rollout state of each city.
func cityStates(w *computev1alpha.Workload) map[string]computev1alpha.CityRolloutState {
	out := map[string]computev1alpha.CityRolloutState{}
	if w.Status.Rollout != nil {
		for _, c := range w.Status.Rollout.Cities {
			out[c.CityCode] = c.State
		}
	}
	return out
}

func TestRolloutTravelsInWavesSoaksHaltsOnABadImageAndUndoRestores(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	for _, city := range []string{"DFW", "LHR", "SIN"} {
		bindCity(t, projectA, ns, city, true)
	}
	w := create(t, projectA, makeWorkload("waves", ns).withPlacement("edge", 1, "DFW", "LHR", "SIN").with(func(w *computev1alpha.Workload) {
		w.Spec.Rollout = &computev1alpha.WorkloadRollout{
			Strategy:    computev1alpha.WavesCityRollout,
			Waves:       []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR", "SIN"}}},
			SoakSeconds: ptr.To(int32(2)),
		}
	}).build())
	reportAll := func(ready bool, reason string, cities ...string) {
		t.Helper()
		wds := deploymentsOf(g, projectA, w)
		for _, c := range cities {
			reportCity(t, projectA, wds[c], ready, reason)
		}
	}

	// The first deployment creates every city at once.
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:1.0", "LHR": "ghcr.io/example/app:1.0", "SIN": "ghcr.io/example/app:1.0"}))
	}, timeout, interval).Should(gomega.Succeed())
	reportAll(true, "", "DFW", "LHR", "SIN")
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout).NotTo(gomega.BeNil())
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseComplete))
	}, timeout, interval).Should(gomega.Succeed())
	// The cities soak (an annotation on each deployment); that bookkeeping
	// is not announced as an update of the deployments.
	g.Eventually(func(g gomega.Gomega) {
		for city, wd := range deploymentsOf(g, projectA, w) {
			g.Expect(wd.Annotations).To(gomega.HaveKey(computev1alpha.RevisionSoakedAnnotation), "city %s", city)
		}
	}, timeout, interval).Should(gomega.Succeed())
	g.Eventually(func() int { return len(workloadEvents(g, projectA, w, workload.EventDeploymentCreated)) }, timeout, interval).Should(gomega.Equal(3))
	g.Consistently(func() int { return len(workloadEvents(g, projectA, w, workload.EventDeploymentUpdated)) }, time.Second, interval).Should(gomega.BeZero())

	// A new image goes to DFW only; a scale change mid-rollout reaches
	// every city at once.
	setImage(t, projectA, w, "ghcr.io/example/app:2.0")
	update(t, projectA, w, func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = 2 })
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:1.0", "SIN": "ghcr.io/example/app:1.0"}))
		for city, wd := range deploymentsOf(g, projectA, w) {
			g.Expect(wd.Spec.ScaleSettings.MinReplicas).To(gomega.Equal(int32(2)), "city %s", city)
		}
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseProgressing))
		g.Expect(cur.Status.Rollout.Wave).To(gomega.Equal(int32(1)))
		g.Expect(cityStates(cur)).To(gomega.Equal(map[string]computev1alpha.CityRolloutState{
			"DFW": computev1alpha.CityUpdating, "LHR": computev1alpha.CityWaiting, "SIN": computev1alpha.CityWaiting}))
	}, timeout, interval).Should(gomega.Succeed())
	reportAll(true, "", "LHR", "SIN") // the scale change, at the old revision
	g.Eventually(func() int { return len(workloadEvents(g, projectA, w, workload.EventDeploymentUpdated)) }, timeout, interval).
		Should(gomega.BeNumerically(">=", 3), "a new spec for every city is announced")

	// DFW ready: it soaks, then LHR and SIN follow.
	reportAll(true, "", "DFW")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout.Wave).To(gomega.Equal(int32(2)))
		g.Expect(cityStates(cur)["DFW"]).To(gomega.Equal(computev1alpha.CityUpdated))
	}, timeout, interval).Should(gomega.Succeed())
	reportAll(true, "", "LHR", "SIN")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(getWorkload(g, projectA, w).Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseComplete))
	}, timeout, interval).Should(gomega.Succeed())
	good := getWorkload(g, projectA, w).Spec.Template

	// A bad image halts after DFW: LHR and SIN keep 2.0, and the Workload
	// says why.
	setImage(t, projectA, w, "ghcr.io/example/app:bad")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)["DFW"]).To(gomega.Equal("ghcr.io/example/app:bad"))
	}, timeout, interval).Should(gomega.Succeed())
	reportAll(false, computev1alpha.ReasonImageUnavailable, "DFW")
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseHalted))
		g.Expect(cityStates(cur)["DFW"]).To(gomega.Equal(computev1alpha.CityHalted))
		prog := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(prog).NotTo(gomega.BeNil())
		g.Expect(prog.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(prog.Reason).To(gomega.Equal(computev1alpha.ReasonRolloutHalted))
		g.Expect(prog.Message).To(gomega.ContainSubstring("edge/DFW"))
		g.Expect(prog.Message).To(gomega.ContainSubstring(computev1alpha.ReasonImageUnavailable))
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
		"DFW": "ghcr.io/example/app:bad", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))

	// Undo (the template of the good revision) restores DFW; the others
	// never left it.
	update(t, projectA, w, func(w *computev1alpha.Workload) { w.Spec.Template = good })
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))
	}, timeout, interval).Should(gomega.Succeed())
	reportAll(true, "", "DFW")
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseComplete))
		prog := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(prog.Reason).NotTo(gomega.Equal(computev1alpha.ReasonRolloutHalted))
	}, timeout, interval).Should(gomega.Succeed())
}

func TestRolloutWaitsForApprovalAndRollsBackOnFailure(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectB)
	for _, city := range []string{"DFW", "LHR", "SIN"} {
		bindCity(t, projectB, ns, city, true)
	}
	w := create(t, projectB, makeWorkload("canary", ns).withPlacement("edge", 1, "DFW", "LHR", "SIN").with(func(w *computev1alpha.Workload) {
		w.Spec.Rollout = &computev1alpha.WorkloadRollout{
			Strategy:  computev1alpha.CanaryCityRollout,
			Canary:    &computev1alpha.CanaryRollout{CityCode: "LHR"},
			Approval:  computev1alpha.ManualRolloutApproval,
			OnFailure: computev1alpha.RollbackOnFailure,
		}
	}).build())
	report := func(ready bool, reason string, cities ...string) {
		t.Helper()
		wds := deploymentsOf(g, projectB, w)
		for _, c := range cities {
			reportCity(t, projectB, wds[c], ready, reason)
		}
	}
	g.Eventually(func(g gomega.Gomega) { g.Expect(deploymentsOf(g, projectB, w)).To(gomega.HaveLen(3)) }, timeout, interval).Should(gomega.Succeed())
	report(true, "", "DFW", "LHR", "SIN")

	// The canary gets 2.0; the next wave waits for approval.
	setImage(t, projectB, w, "ghcr.io/example/app:2.0")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectB, w)["LHR"]).To(gomega.Equal("ghcr.io/example/app:2.0"))
	}, timeout, interval).Should(gomega.Succeed())
	report(true, "", "LHR")
	var hash string
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectB, w)
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseAwaitingApproval))
		prog := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(prog.Reason).To(gomega.Equal(computev1alpha.ReasonRolloutAwaitingApproval))
		hash = cur.Status.Rollout.TemplateHash
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(images(g, projectB, w)).To(gomega.Equal(map[string]string{
		"DFW": "ghcr.io/example/app:1.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:1.0"}))

	// Approving wave 2 lets DFW and SIN follow.
	update(t, projectB, w, func(w *computev1alpha.Workload) {
		w.Annotations = map[string]string{computev1alpha.RolloutApprovedAnnotation: hash + ":2"}
	})
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectB, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))
	}, timeout, interval).Should(gomega.Succeed())
	report(true, "", "DFW", "SIN")

	// A crashing canary is rolled back to 2.0 and the rollout stays
	// halted; the other cities never leave 2.0.
	setImage(t, projectB, w, "ghcr.io/example/app:crash")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectB, w)["LHR"]).To(gomega.Equal("ghcr.io/example/app:crash"))
	}, timeout, interval).Should(gomega.Succeed())
	report(false, computev1alpha.ReasonInstanceCrashing, "LHR")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectB, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))
		lhr := deploymentsOf(g, projectB, w)["LHR"]
		g.Expect(lhr.Annotations[computev1alpha.RolledBackFromAnnotation]).To(gomega.HaveSuffix(":" + computev1alpha.ReasonInstanceCrashing))
	}, timeout, interval).Should(gomega.Succeed())
	report(true, "", "LHR")
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectB, w)
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseHalted))
		g.Expect(cityStates(cur)["LHR"]).To(gomega.Equal(computev1alpha.CityRolledBack))
		g.Expect(strings.Contains(cur.Status.Rollout.Message, "edge/LHR")).To(gomega.BeTrue(), cur.Status.Rollout.Message)
	}, timeout, interval).Should(gomega.Succeed())

	// The revision history is untouched by the rollback: the bad template
	// is still the current revision, so `rollout undo` finds 2.0.
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectB, w)
		revs := revisionsOf(g, projectB, w)
		r := revs[cur.Status.CurrentRevision]
		tpl, err := revision.Template(&r)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tpl.Spec.Runtime.Sandbox.Containers[0].Image).To(gomega.Equal("ghcr.io/example/app:crash"))
	}, timeout, interval).Should(gomega.Succeed())
}

// workloadEvents returns the events about Workload w with reason.
func workloadEvents(g gomega.Gomega, plane string, w *computev1alpha.Workload, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(clients[plane].List(context.Background(), list, client.InNamespace(w.Namespace))).To(gomega.Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == w.UID && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
