package cell

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// metricsServed is the cell plane's answer to whether it serves the
// resource metrics API: yes. The plane runs no metrics pipeline (and no
// HPA controller): what is tested is compute's autoscaler controller, on
// the HPAs it writes and the HPA status the tests write.
type metricsServed struct{}

func (metricsServed) Available(context.Context) (bool, error) { return true, nil }

// autoscales makes the deployment autoscale between min and max on cpu
// at 50 % of the requests.
func (b *wdBuilder) autoscales(minReplicas, maxReplicas int32) *wdBuilder {
	b.wd.Spec.ScaleSettings.MinReplicas = minReplicas
	b.wd.Spec.ScaleSettings.MaxReplicas = ptr.To(maxReplicas)
	b.wd.Spec.ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)},
	}}}
	return b
}

// getHPA reads the HPA named after a deployment.
func getHPA(g Gomega, c client.Client, wd *computev1alpha.WorkloadDeployment) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(wd), hpa)).To(Succeed())
	return hpa
}

// expectNoHPA asserts that no HPA is named after a deployment.
func expectNoHPA(g Gomega, c client.Client, wd *computev1alpha.WorkloadDeployment) {
	err := c.Get(context.Background(), client.ObjectKeyFromObject(wd), &autoscalingv2.HorizontalPodAutoscaler{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no HPA, got %v", err)
}

// expectAutoscaling asserts the deployment's AutoscalingReady status and
// reason.
func expectAutoscaling(g Gomega, got *computev1alpha.WorkloadDeployment, st metav1.ConditionStatus, reason string) {
	c := condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingReady)
	g.Expect(c.Status).To(Equal(st), "AutoscalingReady: %s", c.Message)
	g.Expect(c.Reason).To(Equal(reason), "AutoscalingReady: %s", c.Message)
	g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
}

// editSpec changes a deployment's spec with a merge patch.
func editSpec(t *testing.T, wd *computev1alpha.WorkloadDeployment, edit func(*computev1alpha.WorkloadDeployment)) {
	t.Helper()
	g := NewWithT(t)
	cur := getWD(g, wd)
	changed := cur.DeepCopy()
	edit(changed)
	g.Expect(k8s.Patch(context.Background(), changed, client.MergeFrom(cur))).To(Succeed())
}

func TestTheAutoscalerKeepsOneHPAInStepWithTheSettings(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().autoscales(1, 3).create(t)

	var hpa *autoscalingv2.HorizontalPodAutoscaler
	g.Eventually(func(g Gomega) {
		hpa = getHPA(g, k8s, wd)
		got := getWD(g, wd)
		expectAutoscaling(g, got, metav1.ConditionUnknown, computev1alpha.ReasonAwaitingAutoscaler)
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingLimited).Reason).To(Equal(computev1alpha.ReasonAwaitingAutoscaler))
		g.Expect(got.Status.Autoscaling).NotTo(BeNil())
		g.Expect(got.Status.Autoscaling.MinReplicas).To(BeEquivalentTo(1))
		g.Expect(got.Status.Autoscaling.MaxReplicas).To(BeEquivalentTo(3))
	}).Should(Succeed())
	got := getWD(g, wd)
	g.Expect(metav1.IsControlledBy(hpa, got)).To(BeTrue(), "controlled by the deployment: %v", hpa.OwnerReferences)
	g.Expect(hpa.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{
		APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web",
	}))
	g.Expect(hpa.Spec.MinReplicas).To(Equal(ptr.To[int32](1)))
	g.Expect(hpa.Spec.MaxReplicas).To(BeEquivalentTo(3))
	g.Expect(hpa.Spec.Metrics).To(Equal([]autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
			Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50),
		}},
	}}))
	g.Expect(hpa.Labels).To(HaveKeyWithValue(computev1alpha.WorkloadDeploymentUIDLabel, string(got.UID)))

	// New bounds and a memory target: the same HPA, updated.
	editSpec(t, wd, func(wd *computev1alpha.WorkloadDeployment) {
		wd.Spec.ScaleSettings.MinReplicas = 2
		wd.Spec.ScaleSettings.MaxReplicas = ptr.To[int32](5)
		wd.Spec.ScaleSettings.Metrics = []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{
			Name: corev1.ResourceMemory, Target: computev1alpha.MetricTarget{AverageValue: ptr.To(resource.MustParse("256Mi"))},
		}}}
	})
	g.Eventually(func(g Gomega) {
		updated := getHPA(g, k8s, wd)
		g.Expect(updated.UID).To(Equal(hpa.UID))
		g.Expect(updated.Spec.MinReplicas).To(Equal(ptr.To[int32](2)))
		g.Expect(updated.Spec.MaxReplicas).To(BeEquivalentTo(5))
		g.Expect(updated.Spec.Metrics).To(HaveLen(1))
		g.Expect(updated.Spec.Metrics[0].Resource.Name).To(Equal(corev1.ResourceMemory))
		g.Expect(updated.Spec.Metrics[0].Resource.Target.Type).To(Equal(autoscalingv2.AverageValueMetricType))
		g.Expect(updated.Spec.Metrics[0].Resource.Target.AverageValue.String()).To(Equal("256Mi"))
		got := getWD(g, wd)
		expectAutoscaling(g, got, metav1.ConditionUnknown, computev1alpha.ReasonAwaitingAutoscaler)
		g.Expect(got.Status.Autoscaling.MaxReplicas).To(BeEquivalentTo(5))
	}).Should(Succeed())

	// Autoscaling removed: the HPA goes, and with it the conditions and
	// status.autoscaling.
	editSpec(t, wd, func(wd *computev1alpha.WorkloadDeployment) { wd.Spec.ScaleSettings.MaxReplicas = nil })
	g.Eventually(func(g Gomega) {
		expectNoHPA(g, k8s, wd)
		got := getWD(g, wd)
		g.Expect(got.Status.Autoscaling).To(BeNil())
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingReady).Type).To(BeEmpty())
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingLimited).Type).To(BeEmpty())
		expectConverged(g, wd, 2)
	}).Should(Succeed())
}

func TestTheAutoscalerReportsTheHPAsVerdicts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().autoscales(1, 3).create(t)
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	g.Eventually(func(g Gomega) { hpa = getHPA(g, k8s, wd) }).Should(Succeed())

	// As the cell's HPA controller would write it: able to scale, reading
	// its metric, and held at its ceiling.
	scaled := metav1.NewTime(time.Now().Truncate(time.Second))
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 3, DesiredReplicas: 3, LastScaleTime: &scaled,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](90), AverageValue: ptr.To(resource.MustParse("180m"))},
		}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: scaled},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to compute the replica count", LastTransitionTime: scaled},
			{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: "TooManyReplicas", Message: "the desired replica count is more than the maximum replica count", LastTransitionTime: scaled},
		},
	}
	g.Expect(k8s.Status().Update(ctx, hpa)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getWD(g, wd)
		expectAutoscaling(g, got, metav1.ConditionTrue, computev1alpha.ReasonAutoscalerReady)
		limited := condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingLimited)
		g.Expect(limited.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(limited.Reason).To(Equal("TooManyReplicas"))
		a := got.Status.Autoscaling
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.DesiredReplicas).To(BeEquivalentTo(3))
		g.Expect(a.CurrentReplicas).To(BeEquivalentTo(3))
		g.Expect(a.LastScaleTime.Equal(&scaled)).To(BeTrue(), "lastScaleTime %v", a.LastScaleTime)
		g.Expect(a.Metrics).To(HaveLen(1))
		g.Expect(a.Metrics[0].Name).To(Equal(corev1.ResourceCPU))
		g.Expect(a.Metrics[0].Target.AverageUtilization).To(Equal(ptr.To[int32](50)))
		g.Expect(a.Metrics[0].CurrentAverageUtilization).To(Equal(ptr.To[int32](90)))
		g.Expect(a.Metrics[0].CurrentAverageValue.String()).To(Equal("180m"))
		expectConverged(g, wd, 1)
	}).Should(Succeed())
	// Settled, nothing is written again.
	settled := writes.in(ns)
	g.Consistently(func() int { return writes.in(ns) }, 2*time.Second).Should(Equal(settled), "no write without a change")

	// The metric can no longer be read: False wins, with the HPA's reason.
	hpa = getHPA(g, k8s, wd)
	hpa.Status.Conditions[1] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
		Reason: "FailedGetResourceMetric", Message: "unable to get metrics for resource cpu", LastTransitionTime: metav1.Now()}
	g.Expect(k8s.Status().Update(ctx, hpa)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getWD(g, wd)
		expectAutoscaling(g, got, metav1.ConditionFalse, "FailedGetResourceMetric")
		g.Expect(condition(got.Status.Conditions, computev1alpha.ConditionAutoscalingReady).Message).To(Equal("unable to get metrics for resource cpu"))
	}).Should(Succeed())
}

func TestAStrayHPAIsLeftAloneAndTheDeploymentHeldAtItsFloor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	stray := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"owner": "someone-else"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "other"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 7,
		},
	}
	g.Expect(k8s.Create(ctx, stray)).To(Succeed())
	wd := makeWD(ns, "web").parallel().autoscales(1, 4).replicas(3).create(t)

	g.Eventually(func(g Gomega) {
		got := expectConverged(g, wd, 1)
		expectAutoscaling(g, got, metav1.ConditionFalse, computev1alpha.ReasonAutoscalerNotOwned)
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		got := getHPA(g, k8s, wd)
		g.Expect(got.ResourceVersion).To(Equal(stray.ResourceVersion), "the stray is never written")
		g.Expect(got.OwnerReferences).To(BeEmpty())
		g.Expect(instancesIn(g, ns)).To(HaveLen(1), "held at minReplicas, not the stale spec.replicas")
	}, 2*time.Second).Should(Succeed())

	// The stray goes: compute creates its own, and the count comes from
	// spec.replicas again.
	g.Expect(k8s.Delete(ctx, stray)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hpa := getHPA(g, k8s, wd)
		g.Expect(metav1.IsControlledBy(hpa, getWD(g, wd))).To(BeTrue())
		expectConverged(g, wd, 3)
	}).Should(Succeed())
}

func TestSuspensionRemovesTheHPAUntilTheDeploymentResumes(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().autoscales(1, 4).replicas(2).create(t)
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	g.Eventually(func(g Gomega) {
		hpa = getHPA(g, k8s, wd)
		expectConverged(g, wd, 2)
	}).Should(Succeed())

	editSpec(t, wd, func(wd *computev1alpha.WorkloadDeployment) {
		metav1.SetMetaDataAnnotation(&wd.ObjectMeta, computev1alpha.SuspendedAnnotation, computev1alpha.SuspendedAnnotationValue)
	})
	g.Eventually(func(g Gomega) {
		expectNoHPA(g, k8s, wd)
		got := getWD(g, wd)
		expectAutoscaling(g, got, metav1.ConditionFalse, computev1alpha.ReasonAutoscalingSuspended)
		g.Expect(got.Status.Suspended).To(BeTrue())
		g.Expect(instancesIn(g, ns)).To(HaveLen(2), "suspension keeps every Instance")
	}).Should(Succeed())

	editSpec(t, wd, func(wd *computev1alpha.WorkloadDeployment) {
		delete(wd.Annotations, computev1alpha.SuspendedAnnotation)
	})
	g.Eventually(func(g Gomega) {
		again := getHPA(g, k8s, wd)
		g.Expect(again.UID).NotTo(Equal(hpa.UID), "a new HPA")
		got := expectConverged(g, wd, 2)
		expectAutoscaling(g, got, metav1.ConditionUnknown, computev1alpha.ReasonAwaitingAutoscaler)
	}).Should(Succeed())
}

func TestTheScaleSubresourceScalesAnAutoscaledDeploymentWithinItsBounds(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().autoscales(1, 4).create(t)
	g.Eventually(func(g Gomega) {
		getHPA(g, k8s, wd)
		expectConverged(g, wd, 1)
	}).Should(Succeed())

	// As the HPA controller scales: through the scale subresource.
	scaleTo(t, wd, 3)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())
	// Beyond the ceiling, the ceiling.
	scaleTo(t, wd, 9)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 4) }).Should(Succeed())
	scaleTo(t, wd, 2)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())
}

func TestACellWithoutMetricsHoldsTheDeploymentAtItsFloor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := quotaNamespace(t)
	quotas.decide(ns, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "granted")
	wd := makeWD(ns, "web").parallel().autoscales(2, 5).replicas(4).wd
	g.Expect(quotaK8s.Create(ctx, wd)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &computev1alpha.WorkloadDeployment{}
		g.Expect(quotaK8s.Get(ctx, client.ObjectKeyFromObject(wd), got)).To(Succeed())
		expectAutoscaling(g, got, metav1.ConditionFalse, computev1alpha.ReasonMetricsUnavailable)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.DesiredReplicas).To(BeEquivalentTo(2))
		g.Expect(got.Status.Autoscaling).NotTo(BeNil())
		g.Expect(got.Status.Autoscaling.DesiredReplicas).To(BeEquivalentTo(2))
		list := &computev1alpha.InstanceList{}
		g.Expect(quotaK8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(2))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) { expectNoHPA(g, quotaK8s, wd) }, 2*time.Second).Should(Succeed())
}
