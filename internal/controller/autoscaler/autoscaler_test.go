package autoscaler

import (
	"context"
	"errors"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func autoscalingWD() *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "wd-uid", Generation: 3},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "web", UID: "w-uid"},
			CityCode:      "DFW",
			PlacementName: "default",
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas: 0,
				MaxReplicas: ptr.To[int32](4),
				Metrics: []computev1alpha.MetricSpec{
					{Resource: &computev1alpha.ResourceMetricSource{Name: corev1.ResourceCPU, Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](70)}}},
					{Resource: &computev1alpha.ResourceMetricSource{Name: corev1.ResourceMemory, Target: computev1alpha.MetricTarget{AverageValue: ptr.To(resource.MustParse("1Gi"))}}},
					{},
				},
			},
		},
	}
}

func TestDesiredHPA(t *testing.T) {
	wd := autoscalingWD()
	hpa := desiredHPA(wd)
	if !metav1.IsControlledBy(hpa, wd) {
		t.Fatalf("the HPA is not controlled by the deployment: %v", hpa.OwnerReferences)
	}
	if hpa.Name != "web" || hpa.Namespace != "ns" {
		t.Errorf("HPA %s/%s, want ns/web", hpa.Namespace, hpa.Name)
	}
	if got := *hpa.Spec.MinReplicas; got != 1 {
		t.Errorf("minReplicas %d, want 1: an HPA cannot scale to zero", got)
	}
	if hpa.Spec.MaxReplicas != 4 {
		t.Errorf("maxReplicas %d, want 4", hpa.Spec.MaxReplicas)
	}
	if len(hpa.Spec.Metrics) != 2 {
		t.Fatalf("metrics %v, want cpu and memory (the metric without a resource is skipped)", hpa.Spec.Metrics)
	}
	if m := hpa.Spec.Metrics[0].Resource; m.Name != corev1.ResourceCPU || m.Target.Type != autoscalingv2.UtilizationMetricType || *m.Target.AverageUtilization != 70 {
		t.Errorf("cpu metric %+v", m)
	}
	if m := hpa.Spec.Metrics[1].Resource; m.Target.Type != autoscalingv2.AverageValueMetricType || m.Target.AverageValue.String() != "1Gi" {
		t.Errorf("memory metric %+v", m)
	}
	if v := hpaTarget(computev1alpha.MetricTarget{Value: ptr.To(resource.MustParse("2"))}); v.Type != autoscalingv2.ValueMetricType || v.Value.String() != "2" {
		t.Errorf("value target %+v", v)
	}

	have := hpa.DeepCopy()
	have.Labels["added-by-someone"] = "x"
	have.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	if !inStep(have, hpa) {
		t.Error("labels and behavior of others put the HPA out of step")
	}
	have.Spec.MaxReplicas = 5
	if inStep(have, hpa) {
		t.Error("another ceiling is in step")
	}
}

func hpaCond(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: reason + " message"}
}

func TestHPAConditions(t *testing.T) {
	tests := map[string]struct {
		conds                  []autoscalingv2.HorizontalPodAutoscalerCondition
		observed               *int64
		ready, readyReason     string
		limited, limitedReason string
	}{
		"no verdict yet": {
			ready: "Unknown", readyReason: computev1alpha.ReasonAwaitingAutoscaler,
			limited: "Unknown", limitedReason: computev1alpha.ReasonAwaitingAutoscaler,
		},
		"able and active": {
			conds: []autoscalingv2.HorizontalPodAutoscalerCondition{
				hpaCond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"),
				hpaCond(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound"),
				hpaCond(autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange"),
			},
			ready: "True", readyReason: computev1alpha.ReasonAutoscalerReady,
			limited: "False", limitedReason: "DesiredWithinRange",
		},
		"a False wins with its reason": {
			conds: []autoscalingv2.HorizontalPodAutoscalerCondition{
				hpaCond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"),
				hpaCond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric"),
			},
			ready: "False", readyReason: "FailedGetResourceMetric",
			limited: "Unknown", limitedReason: computev1alpha.ReasonAwaitingAutoscaler,
		},
		"AbleToScale False comes first": {
			conds: []autoscalingv2.HorizontalPodAutoscalerCondition{
				hpaCond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric"),
				hpaCond(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale"),
				hpaCond(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooFewReplicas"),
			},
			ready: "False", readyReason: "FailedGetScale",
			limited: "True", limitedReason: "TooFewReplicas",
		},
		"only one verdict": {
			conds: []autoscalingv2.HorizontalPodAutoscalerCondition{hpaCond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale")},
			ready: "Unknown", readyReason: computev1alpha.ReasonAwaitingAutoscaler,
			limited: "Unknown", limitedReason: computev1alpha.ReasonAwaitingAutoscaler,
		},
		"verdicts of an older spec": {
			conds: []autoscalingv2.HorizontalPodAutoscalerCondition{
				hpaCond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"),
				hpaCond(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound"),
			},
			observed: ptr.To[int64](1),
			ready:    "Unknown", readyReason: computev1alpha.ReasonAwaitingAutoscaler,
			limited: "Unknown", limitedReason: computev1alpha.ReasonAwaitingAutoscaler,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			hpa.Status.Conditions, hpa.Status.ObservedGeneration = tc.conds, tc.observed
			ready, limited := verdict{hpa: hpa}.conditions()
			if string(ready.Status) != tc.ready || ready.Reason != tc.readyReason {
				t.Errorf("AutoscalingReady %s/%s (%s), want %s/%s", ready.Status, ready.Reason, ready.Message, tc.ready, tc.readyReason)
			}
			if string(limited.Status) != tc.limited || limited.Reason != tc.limitedReason {
				t.Errorf("AutoscalingLimited %s/%s, want %s/%s", limited.Status, limited.Reason, tc.limited, tc.limitedReason)
			}
		})
	}
}

func TestComputesOwnVerdictHasNoAutoscalerActing(t *testing.T) {
	ready, limited := verdict{status: metav1.ConditionFalse, reason: computev1alpha.ReasonMetricsUnavailable, message: "no metrics"}.conditions()
	if ready.Status != metav1.ConditionFalse || ready.Reason != computev1alpha.ReasonMetricsUnavailable || ready.Message != "no metrics" {
		t.Errorf("AutoscalingReady %+v", ready)
	}
	if limited.Status != metav1.ConditionUnknown || limited.Reason != computev1alpha.ReasonMetricsUnavailable {
		t.Errorf("AutoscalingLimited %+v", limited)
	}
}

func TestAutoscalingStatus(t *testing.T) {
	wd := autoscalingWD()
	wd.Status.DesiredReplicas, wd.Status.Replicas = 1, 2
	st := autoscalingStatus(wd, nil)
	if st.MinReplicas != 0 || st.MaxReplicas != 4 || st.DesiredReplicas != 1 || st.CurrentReplicas != 2 || st.Metrics != nil {
		t.Errorf("without an HPA: %+v, want the bounds and the deployment's own counts", st)
	}

	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if st := autoscalingStatus(wd, hpa); st.Metrics != nil || st.LastScaleTime != nil {
		t.Errorf("an HPA that read nothing: %+v, want no metrics", st)
	}
	at := metav1.NewTime(time.Unix(1700000000, 0))
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		DesiredReplicas: 3, CurrentReplicas: 2, LastScaleTime: &at,
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(resource.MustParse("700Mi"))}}},
			{Type: autoscalingv2.PodsMetricSourceType},
		},
	}
	st = autoscalingStatus(wd, hpa)
	if st.DesiredReplicas != 3 || st.CurrentReplicas != 2 || !st.LastScaleTime.Equal(&at) {
		t.Errorf("from the HPA: %+v", st)
	}
	if len(st.Metrics) != 2 {
		t.Fatalf("metrics %+v, want cpu and memory in the settings' order", st.Metrics)
	}
	if m := st.Metrics[0]; m.Name != corev1.ResourceCPU || *m.Target.AverageUtilization != 70 || m.CurrentAverageUtilization != nil || m.CurrentAverageValue != nil {
		t.Errorf("cpu, not read yet: %+v", m)
	}
	if m := st.Metrics[1]; m.Name != corev1.ResourceMemory || m.CurrentAverageValue.String() != "700Mi" {
		t.Errorf("memory: %+v", m)
	}
}

func TestDiscoveryKeepsItsAnswerForTheTTL(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1700000000, 0))
	d := &Discovery{Client: fake, TTL: 30 * time.Second, Clock: clk}
	ctx := context.Background()
	if ok, err := d.Available(ctx); ok || err != nil {
		t.Fatalf("no metrics group: %v, %v; want false without error", ok, err)
	}
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: MetricsGroupVersion, APIResources: []metav1.APIResource{{Name: "nodes"}, {Name: "pods"}}}}
	clk.SetTime(clk.Now().Add(29 * time.Second))
	if ok, _ := d.Available(ctx); ok {
		t.Fatal("the answer was not kept for the TTL")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if ok, err := d.Available(ctx); !ok || err != nil {
		t.Fatalf("after the TTL: %v, %v; want true", ok, err)
	}
	fake.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	clk.SetTime(clk.Now().Add(time.Minute))
	if _, err := d.Available(ctx); err == nil {
		t.Fatal("an error of discovery is not reported")
	}
	fake.ReactionChain = nil
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: MetricsGroupVersion, APIResources: []metav1.APIResource{{Name: "nodes"}}}}
	if ok, _ := d.Available(ctx); ok {
		t.Fatal("a metrics API without pods serves no Pod metrics")
	}
}
