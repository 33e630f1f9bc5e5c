package management

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// markUnreachable writes wd's status as the federator does while its cell
// is not heard from, found unreachable at since.
func markUnreachable(t *testing.T, wd computev1alpha.WorkloadDeployment, since time.Time) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := clients[projectA].Get(context.Background(), client.ObjectKeyFromObject(&wd), cur); err != nil {
			return err
		}
		cur.Status.LastSeenTime = &metav1.Time{Time: since.Add(-4 * time.Second)}
		meta.RemoveStatusCondition(&cur.Status.Conditions, computev1alpha.ConditionAvailable)
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAvailable,
			Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonCellUnreachable,
			Message: "the city's cell is unreachable", LastTransitionTime: metav1.NewTime(since)})
		return clients[projectA].Status().Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

// fallbacksOf returns w's fallback deployments by the deployment they
// stand in for.
func fallbacksOf(g gomega.Gomega, w *computev1alpha.Workload) map[string]computev1alpha.WorkloadDeployment {
	out := map[string]computev1alpha.WorkloadDeployment{}
	for _, wd := range deploymentsOf(g, projectA, w) {
		if src := wd.Labels[computev1alpha.FailoverForLabel]; src != "" {
			out[src] = wd
		}
	}
	return out
}

// TestAnUnreachableLocationFailsOverAndReturnsWithoutTouchingItsDeployment:
// LHR reported unreachable past its toleration gets a fallback deployment
// in SIN running its replicas, the status and the FailedOver condition
// say so, and LHR's own deployment is neither deleted nor changed; once
// LHR is back in full for the hold-down the fallback drains.
func TestAnUnreachableLocationFailsOverAndReturnsWithoutTouchingItsDeployment(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	for _, city := range []string{"DFW", "LHR", "SIN"} {
		bindCity(t, projectA, ns, city, true)
	}
	w := create(t, projectA, makeWorkload("web", ns).withPlacement("edge", 2, "DFW", "LHR").with(func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].Failover = &computev1alpha.PlacementFailover{
			Fallbacks:          []computev1alpha.PlacementLocation{{Name: "sin-1"}},
			TolerationSeconds:  ptr.To[int32](30),
			ReturnAfterSeconds: ptr.To[int32](10),
		}
	}).build())
	var wds map[string]computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		wds = deploymentsOf(g, projectA, w)
		g.Expect(cityKeys(wds)).To(gomega.ConsistOf("DFW", "LHR"))
	}, timeout, interval).Should(gomega.Succeed())
	for _, wd := range wds {
		reportAsCell(t, projectA, wd, cellReport{desired: 2, ready: 2})
	}
	g.Eventually(func(g gomega.Gomega) {
		cond := meta.FindStatusCondition(getWorkload(g, projectA, w).Status.Conditions, computev1alpha.ConditionFailedOver)
		g.Expect(cond).NotTo(gomega.BeNil())
		g.Expect(cond.Reason).To(gomega.Equal(computev1alpha.ReasonNoFailover))
	}, timeout, interval).Should(gomega.Succeed())

	t.Log("LHR unreachable within its toleration: Tolerating, no fallback")
	lhr := wds["LHR"]
	markUnreachable(t, lhr, time.Now())
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		cs, _ := cityStatus(cur, "edge", "LHR")
		g.Expect(cs.Failover).NotTo(gomega.BeNil())
		g.Expect(cs.Failover.Phase).To(gomega.Equal(computev1alpha.FailoverTolerating))
		g.Expect(meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionFailedOver).Reason).To(gomega.Equal(computev1alpha.ReasonFailoverPending))
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(fallbacksOf(g, w)).To(gomega.BeEmpty())

	t.Log("past the toleration: LHR's replicas run in SIN")
	markUnreachable(t, lhr, time.Now().Add(-time.Minute))
	var fb computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		fbs := fallbacksOf(g, w)
		g.Expect(fbs).To(gomega.HaveKey(lhr.Name))
		fb = fbs[lhr.Name]
		g.Expect(fb.Spec.CityCode).To(gomega.Equal("SIN"))
		g.Expect(fb.Spec.LocationRef.Name).To(gomega.Equal("sin-1"))
		g.Expect(fb.Spec.ScaleSettings.MinReplicas).To(gomega.Equal(int32(2)))
		g.Expect(fb.Spec.Template).To(gomega.Equal(lhr.Spec.Template))
		cur := getWorkload(g, projectA, w)
		cs, _ := cityStatus(cur, "edge", "LHR")
		g.Expect(cs.Failover).NotTo(gomega.BeNil())
		g.Expect(cs.Failover.Phase).To(gomega.Equal(computev1alpha.FailoverFailedOver))
		g.Expect(cs.Failover.CityCode).To(gomega.Equal("SIN"))
		g.Expect(cs.Failover.Message).To(gomega.ContainSubstring("2 replica(s) failed over to edge/SIN (failover for LHR)"))
		sin, ok := cityStatus(cur, "edge", "SIN")
		g.Expect(ok).To(gomega.BeTrue())
		g.Expect(sin.FailoverFor).NotTo(gomega.BeNil())
		g.Expect(sin.FailoverFor.DeploymentName).To(gomega.Equal(lhr.Name))
		cond := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionFailedOver)
		g.Expect(cond.Status).To(gomega.Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(gomega.Succeed())
	after := deploymentsOf(g, projectA, w)["LHR"]
	g.Expect(after.UID).To(gomega.Equal(lhr.UID), "LHR's deployment was recreated")
	g.Expect(after.Spec).To(gomega.Equal(lhr.Spec), "LHR's deployment was changed")

	t.Log("LHR back in full: Returning, then the fallback drains after the hold-down")
	reportAsCell(t, projectA, fb, cellReport{desired: 2, ready: 2})
	back := getLHR(g, w, lhr)
	back.Status.LastSeenTime = nil
	g.Expect(clients[projectA].Status().Update(context.Background(), back)).To(gomega.Succeed())
	reportAsCell(t, projectA, lhr, cellReport{desired: 2, ready: 2})
	g.Eventually(func(g gomega.Gomega) {
		cs, _ := cityStatus(getWorkload(g, projectA, w), "edge", "LHR")
		g.Expect(cs.Failover).NotTo(gomega.BeNil())
		g.Expect(cs.Failover.Phase).To(gomega.Equal(computev1alpha.FailoverReturning))
		g.Expect(cs.Failover.ReturnAt).NotTo(gomega.BeNil())
	}, timeout, interval).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		err := clients[projectA].Get(context.Background(), client.ObjectKeyFromObject(&fb), &computev1alpha.WorkloadDeployment{})
		g.Expect(apierrors.IsNotFound(err) || err == nil).To(gomega.BeTrue())
		g.Expect(fallbacksOf(g, w)).To(gomega.BeEmpty())
		cur := getWorkload(g, projectA, w)
		cond := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionFailedOver)
		g.Expect(cond.Reason).To(gomega.Equal(computev1alpha.ReasonNoFailover))
	}, 2*timeout, interval).Should(gomega.Succeed())
	g.Expect(deploymentsOf(g, projectA, w)["LHR"].UID).To(gomega.Equal(lhr.UID))
}

// getLHR reads lhr again.
func getLHR(g gomega.Gomega, w *computev1alpha.Workload, lhr computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	cur := &computev1alpha.WorkloadDeployment{}
	g.Expect(clients[projectA].Get(context.Background(), client.ObjectKeyFromObject(&lhr), cur)).To(gomega.Succeed())
	return cur
}

// TestFailoverIsValidatedFieldByField: a fallback that is not bound, one
// of the placement's own Locations, and a toleration under the minimum
// are each refused at their field.
func TestFailoverIsValidatedFieldByField(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	for _, city := range []string{"DFW", "LHR"} {
		bindCity(t, projectA, ns, city, true)
	}
	w := makeWorkload("web", ns).withPlacement("edge", 1, "DFW").with(func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].Failover = &computev1alpha.PlacementFailover{
			Fallbacks: []computev1alpha.PlacementLocation{{Name: "nowhere"}, {Name: "dfw-1"}, {Name: "lhr-1"}},
		}
	}).build()
	err := clients[projectA].Create(context.Background(), w)
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "%v", err)
	g.Expect(causeFields(err)).To(gomega.ConsistOf(
		"spec.placements[0].failover.fallbacks[0].name", "spec.placements[0].failover.fallbacks[1].name"))
	g.Expect(err.Error()).To(gomega.ContainSubstring("Location nowhere is not bound to this project"))
	g.Expect(err.Error()).To(gomega.ContainSubstring("set failover.allowPlacementLocations: true"))

	w.Spec.Placements[0].Failover.Fallbacks = []computev1alpha.PlacementLocation{{Name: "lhr-1"}}
	w.Spec.Placements[0].Failover.TolerationSeconds = ptr.To[int32](5)
	err = clients[projectA].Create(context.Background(), w)
	g.Expect(err).To(gomega.HaveOccurred())
	g.Expect(err.Error()).To(gomega.ContainSubstring("tolerationSeconds"))

	w.Spec.Placements[0].Failover.TolerationSeconds = nil
	g.Expect(clients[projectA].Create(context.Background(), w)).To(gomega.Succeed())
}

// TestAWavesRolloutCountsTheFallbackAsItsCity: LHR is failed over to SIN;
// a new image travels DFW's wave, then LHR's, which gives the fallback the
// new template too and completes once the fallback is ready at it — LHR
// itself still unreachable, its deployment carrying the new template for
// when it returns.
func TestAWavesRolloutCountsTheFallbackAsItsCity(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	for _, city := range []string{"DFW", "LHR", "SIN"} {
		bindCity(t, projectA, ns, city, true)
	}
	w := create(t, projectA, makeWorkload("waves", ns).withPlacement("edge", 1, "DFW", "LHR").with(func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].Failover = &computev1alpha.PlacementFailover{Fallbacks: []computev1alpha.PlacementLocation{{Name: "sin-1"}}}
		w.Spec.Rollout = &computev1alpha.WorkloadRollout{Strategy: computev1alpha.WavesCityRollout,
			Waves: []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR"}}}}
	}).build())
	var wds map[string]computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		wds = deploymentsOf(g, projectA, w)
		g.Expect(cityKeys(wds)).To(gomega.ConsistOf("DFW", "LHR"))
	}, timeout, interval).Should(gomega.Succeed())
	reportCity(t, projectA, wds["DFW"], true, "")
	reportCity(t, projectA, wds["LHR"], true, "")
	markUnreachable(t, wds["LHR"], time.Now().Add(-10*time.Minute))
	var fb computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		fbs := fallbacksOf(g, w)
		g.Expect(fbs).To(gomega.HaveKey(wds["LHR"].Name))
		fb = fbs[wds["LHR"].Name]
	}, timeout, interval).Should(gomega.Succeed())
	reportCity(t, projectA, fb, true, "")

	t.Log("a new image: DFW's wave first; the fallback keeps LHR's revision")
	setImage(t, projectA, w, "ghcr.io/example/app:2.0")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:1.0", "SIN": "ghcr.io/example/app:1.0"}))
	}, timeout, interval).Should(gomega.Succeed())
	reportCity(t, projectA, deploymentsOf(g, projectA, w)["DFW"], true, "")

	t.Log("LHR's wave gives LHR and its fallback the new image; the fallback ready at it completes the rollout")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(images(g, projectA, w)).To(gomega.Equal(map[string]string{
			"DFW": "ghcr.io/example/app:2.0", "LHR": "ghcr.io/example/app:2.0", "SIN": "ghcr.io/example/app:2.0"}))
	}, timeout, interval).Should(gomega.Succeed())
	reportCity(t, projectA, deploymentsOf(g, projectA, w)["SIN"], true, "")
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Rollout).NotTo(gomega.BeNil())
		g.Expect(cur.Status.Rollout.Phase).To(gomega.Equal(computev1alpha.RolloutPhaseComplete), "%+v", cur.Status.Rollout)
		lhr, _ := cityStatus(cur, "edge", "LHR")
		g.Expect(lhr.Stale).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
}
