package workloaddeployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestAutoscaledReplicas(t *testing.T) {
	autoscaling := func(replicas int32) *wdBuilder {
		b := makeWD(replicas)
		b.wd.Spec.ScaleSettings = computev1alpha.HorizontalScaleSettings{MinReplicas: 2, MaxReplicas: ptr.To[int32](5),
			Metrics: []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}}
		return b
	}
	ready := func(b *wdBuilder, reason string) *wdBuilder {
		b.wd.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionAutoscalingReady, Status: metav1.ConditionFalse, Reason: reason}}
		return b
	}
	tests := map[string]struct {
		wd     *wdBuilder
		ownHPA bool
		want   int32
	}{
		"its HPA acts: spec.replicas":                  {wd: autoscaling(4), ownHPA: true, want: 4},
		"its HPA acts, above the ceiling: the ceiling": {wd: autoscaling(9), ownHPA: true, want: 5},
		"its HPA acts, below the floor: the floor":     {wd: autoscaling(1), ownHPA: true, want: 2},
		"not looked at yet: the floor":                 {wd: autoscaling(4), want: 2},
		"no metrics: the floor":                        {wd: ready(autoscaling(4), computev1alpha.ReasonMetricsUnavailable), want: 2},
		"a stray HPA: the floor":                       {wd: ready(autoscaling(4), computev1alpha.ReasonAutoscalerNotOwned), want: 2},
		"suspended: the count it was suspended at":     {wd: autoscaling(4).suspended(), want: 4},
		"resumed, HPA not back yet: the same count":    {wd: ready(autoscaling(4), computev1alpha.ReasonAutoscalingSuspended), want: 4},
		"HPA being created: spec.replicas":             {wd: ready(autoscaling(4), computev1alpha.ReasonAwaitingAutoscaler), want: 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := autoscaledReplicas(tc.wd.build(), tc.ownHPA); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}
