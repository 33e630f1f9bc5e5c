//go:build e2e

package compute

import (
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
)

// TestACityWithoutMetricsSaysSoAndHoldsTheFloor: this suite's cells have
// no real node, so they serve no resource metrics. A placement that asks
// for autoscaling there gets no autoscaler and no guess: the city, its
// placement and the Workload report AutoscalingReady=False
// MetricsUnavailable, and the city holds minReplicas, through a Workload
// edit too; removing autoscaling clears the conditions.
func TestACityWithoutMetricsSaysSoAndHoldsTheFloor(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "nometrics").withPlacement("default", 2, "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 2, ready: 2, desired: 2, updated: 2})

	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		s := &w.Spec.Placements[0].ScaleSettings
		s.MaxReplicas = ptr.To(int32(5))
		s.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To(int32(50))},
		}}}
	})
	began := time.Now()
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		for _, conds := range [][]metav1.Condition{got.Status.Conditions, got.Status.Placements[0].Conditions} {
			c := meta.FindStatusCondition(conds, computev1alpha.ConditionAutoscalingReady)
			g.Expect(c).NotTo(BeNil(), "no AutoscalingReady: %+v", conds)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(computev1alpha.ReasonMetricsUnavailable))
		}
		city := cityOf(got, "default", "LHR")
		g.Expect(city).NotTo(BeNil())
		g.Expect(city.Autoscaling).NotTo(BeNil(), "the city reports no autoscaling")
		g.Expect(city.Autoscaling.MinReplicas).To(BeEquivalentTo(2))
		g.Expect(city.Autoscaling.MaxReplicas).To(BeEquivalentTo(5))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	t.Logf("MetricsUnavailable on the Workload %s after the edit", time.Since(began).Round(100*time.Millisecond))

	wd := &computev1alpha.WorkloadDeployment{}
	g.Expect(cells["LHR"].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: cityOf(got, "default", "LHR").DeploymentName}, wd)).To(Succeed())
	err := cells["LHR"].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, &autoscalingv2.HorizontalPodAutoscaler{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an autoscaler was created in a cell without metrics: %v", err)
	g.Consistently(func(g Gomega) {
		g.Expect(instancesIn(g, cells["LHR"], ns.hub, wd.Name)).To(HaveLen(2), "the city left its floor")
	}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		s := &w.Spec.Placements[0].ScaleSettings
		s.MaxReplicas, s.Metrics = nil, nil
	})
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAutoscalingReady)).To(BeNil())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAutoscalingLimited)).To(BeNil())
		g.Expect(cityOf(got, "default", "LHR").Autoscaling).To(BeNil())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}
