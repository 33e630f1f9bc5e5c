package management

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// reportAutoscaler writes a WorkloadDeployment's autoscaling status as its
// cell would, for the generation the cell last reported: AutoscalingReady
// with ready/readyReason, AutoscalingLimited False, and what the
// autoscaler reports (1–4 replicas, 3 wanted, cpu at 72 % of 50 %).
func reportAutoscaler(t *testing.T, plane string, wd computev1alpha.WorkloadDeployment, ready metav1.ConditionStatus, readyReason string) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := clients[plane].Get(context.Background(), client.ObjectKeyFromObject(&wd), cur); err != nil {
			return err
		}
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady,
			Status: ready, Reason: readyReason, Message: "autoscaler: " + readyReason, ObservedGeneration: cur.Status.ObservedGeneration})
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited,
			Status: metav1.ConditionFalse, Reason: "DesiredWithinRange", Message: "within range", ObservedGeneration: cur.Status.ObservedGeneration})
		cur.Status.Autoscaling = &computev1alpha.AutoscalingStatus{MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 3, CurrentReplicas: 3,
			Metrics: []computev1alpha.AutoscalingMetricStatus{{Name: "cpu",
				Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}, CurrentAverageUtilization: ptr.To[int32](72)}}}
		return clients[plane].Status().Update(context.Background(), cur)
	}, timeout, interval).Should(gomega.Succeed())
}

func TestAutoscalingIsAggregatedFromEachCityToThePlacementAndTheWorkload(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	w := create(t, projectA, makeWorkload("scaled", ns).withPlacement("edge", 1, "DFW", "LHR").with(func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4)
		w.Spec.Placements[0].ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
			Name: "cpu", Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}
	}).build())

	var wds map[string]computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		wds = deploymentsOf(g, projectA, w)
		g.Expect(wds).To(gomega.HaveLen(2))
	}, timeout, interval).Should(gomega.Succeed())
	condition := func(g gomega.Gomega, conds []metav1.Condition, typ string) metav1.Condition {
		c := meta.FindStatusCondition(conds, typ)
		g.Expect(c).NotTo(gomega.BeNil(), typ)
		return *c
	}

	// No cell has evaluated the settings: pending.
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(condition(g, cur.Status.Conditions, computev1alpha.ConditionAutoscalingReady).Reason).
			To(gomega.Equal(computev1alpha.ReasonAwaitingAutoscaler))
	}, timeout, interval).Should(gomega.Succeed())

	// DFW's autoscaler is ready, LHR's cell serves no metrics: False
	// wins, and each city carries what its autoscaler reports.
	for city, wd := range wds {
		reportAsCell(t, projectA, wd, cellReport{desired: 3, ready: 3})
		ready, reason := metav1.ConditionTrue, computev1alpha.ReasonAutoscalerReady
		if city == "LHR" {
			ready, reason = metav1.ConditionFalse, computev1alpha.ReasonMetricsUnavailable
		}
		reportAutoscaler(t, projectA, wd, ready, reason)
	}
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		ready := condition(g, cur.Status.Conditions, computev1alpha.ConditionAutoscalingReady)
		g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(gomega.Equal(computev1alpha.ReasonMetricsUnavailable))
		g.Expect(ready.Message).To(gomega.Equal("edge: LHR: autoscaler: MetricsUnavailable"))
		limited := condition(g, cur.Status.Placements[0].Conditions, computev1alpha.ConditionAutoscalingLimited)
		g.Expect(limited.Reason).To(gomega.Equal(computev1alpha.ReasonWithinScalingLimits))
		cs, _ := cityStatus(cur, "edge", "DFW")
		g.Expect(cs.Autoscaling).NotTo(gomega.BeNil())
		g.Expect(cs.Autoscaling.DesiredReplicas).To(gomega.Equal(int32(3)))
		g.Expect(*cs.Autoscaling.Metrics[0].CurrentAverageUtilization).To(gomega.Equal(int32(72)))
	}, timeout, interval).Should(gomega.Succeed())

	// Autoscaling removed: both conditions go, and the cities no longer
	// show an autoscaler.
	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].ScaleSettings.MaxReplicas, w.Spec.Placements[0].ScaleSettings.Metrics = nil, nil
	})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionAutoscalingReady)).To(gomega.BeNil())
		g.Expect(meta.FindStatusCondition(cur.Status.Placements[0].Conditions, computev1alpha.ConditionAutoscalingLimited)).To(gomega.BeNil())
		cs, _ := cityStatus(cur, "edge", "DFW")
		g.Expect(cs.Autoscaling).To(gomega.BeNil())
	}, timeout, interval).Should(gomega.Succeed())
}
