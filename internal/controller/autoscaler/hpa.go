package autoscaler

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// desiredHPA is the HorizontalPodAutoscaler wd's scaleSettings ask for:
// named as wd, in its namespace, controlled by it, scaling its scale
// subresource between the placement's bounds on its resource metrics. The
// HPA's floor is at least 1 (an HPA cannot scale to zero without the
// HPAScaleToZero feature gate); the settings must autoscale.
func desiredHPA(wd *computev1alpha.WorkloadDeployment) *autoscalingv2.HorizontalPodAutoscaler {
	s := wd.Spec.ScaleSettings
	minReplicas := max(s.MinReplicas, 1)
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: wd.Namespace,
			Name:      wd.Name,
			Labels: map[string]string{
				computev1alpha.WorkloadUIDLabel:            string(wd.Spec.WorkloadRef.UID),
				computev1alpha.WorkloadNameLabel:           wd.Spec.WorkloadRef.Name,
				computev1alpha.WorkloadDeploymentUIDLabel:  string(wd.UID),
				computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
				computev1alpha.CityCodeLabel:               wd.Spec.CityCode,
				computev1alpha.PlacementNameLabel:          wd.Spec.PlacementName,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         computev1alpha.GroupVersion.String(),
				Kind:               computev1alpha.WorkloadDeploymentKind,
				Name:               wd.Name,
				UID:                wd.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: computev1alpha.GroupVersion.String(),
				Kind:       computev1alpha.WorkloadDeploymentKind,
				Name:       wd.Name,
			},
			MinReplicas: ptr.To(minReplicas),
			MaxReplicas: max(ptr.Deref(s.MaxReplicas, 0), minReplicas),
			Metrics:     hpaMetrics(s.Metrics),
		},
	}
}

// hpaMetrics turns the placement's metrics into the HPA's: each resource
// metric with its one target (Utilization, AverageValue or Value, in that
// order when several are set; admission allows one). A metric without a
// resource is skipped: resource metrics are the only kind compute offers.
func hpaMetrics(in []computev1alpha.MetricSpec) []autoscalingv2.MetricSpec {
	out := make([]autoscalingv2.MetricSpec, 0, len(in))
	for _, m := range in {
		if m.Resource == nil {
			continue
		}
		out = append(out, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   m.Resource.Name,
				Target: hpaTarget(m.Resource.Target),
			},
		})
	}
	return out
}

// hpaTarget is the HPA's form of a metric target.
func hpaTarget(t computev1alpha.MetricTarget) autoscalingv2.MetricTarget {
	switch {
	case t.AverageUtilization != nil:
		return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(*t.AverageUtilization)}
	case t.AverageValue != nil:
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(t.AverageValue.DeepCopy())}
	case t.Value != nil:
		return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(t.Value.DeepCopy())}
	}
	return autoscalingv2.MetricTarget{}
}

// inStep reports whether an HPA of compute's already has the desired
// spec and labels (the HPA controller and others may add labels and
// annotations of their own; only compute's are compared).
func inStep(have, want *autoscalingv2.HorizontalPodAutoscaler) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return specEqual(have.Spec, want.Spec)
}

// specEqual compares the parts of an HPA's spec compute sets: the target,
// the bounds and the metrics (behavior is left to whoever sets it).
func specEqual(a, b autoscalingv2.HorizontalPodAutoscalerSpec) bool {
	return a.ScaleTargetRef == b.ScaleTargetRef &&
		ptr.Equal(a.MinReplicas, b.MinReplicas) &&
		a.MaxReplicas == b.MaxReplicas &&
		equality.Semantic.DeepEqual(a.Metrics, b.Metrics)
}
