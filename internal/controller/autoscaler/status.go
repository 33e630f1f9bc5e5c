package autoscaler

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// verdict is what a reconcile found about a deployment that autoscales:
// either compute's own reason why no HPA of its acts (status, reason and
// message of AutoscalingReady), or the HPA of compute's whose verdicts are
// reported.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
	hpa     *autoscalingv2.HorizontalPodAutoscaler
}

// conditions are AutoscalingReady and AutoscalingLimited for v.
func (v verdict) conditions() (ready, limited metav1.Condition) {
	if v.hpa == nil {
		ready = metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady, Status: v.status, Reason: v.reason, Message: v.message}
		limited = metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited, Status: metav1.ConditionUnknown, Reason: v.reason,
			Message: "no autoscaler acts: " + v.message}
		return ready, limited
	}
	return hpaConditions(v.hpa)
}

// awaiting are the conditions of an HPA that has not evaluated its current
// spec yet.
func awaiting() (ready, limited metav1.Condition) {
	ready = metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady, Status: metav1.ConditionUnknown,
		Reason: computev1alpha.ReasonAwaitingAutoscaler, Message: "waiting for the autoscaler to evaluate the current scaling settings"}
	limited = metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited, Status: metav1.ConditionUnknown,
		Reason: computev1alpha.ReasonAwaitingAutoscaler, Message: "waiting for the autoscaler to report its scaling limits"}
	return ready, limited
}

// hpaConditions map an HPA's conditions: a False AbleToScale or
// ScalingActive makes AutoscalingReady False with its reason and message
// (AbleToScale first); both True make it True (AutoscalerReady); anything
// else, or an HPA that has not observed its latest spec, is Unknown
// (AwaitingAutoscaler). AutoscalingLimited is ScalingLimited as the HPA
// reports it, Unknown until it does.
func hpaConditions(hpa *autoscalingv2.HorizontalPodAutoscaler) (ready, limited metav1.Condition) {
	ready, limited = awaiting()
	if g := hpa.Status.ObservedGeneration; g != nil && *g < hpa.Generation {
		return ready, limited
	}
	byType := map[autoscalingv2.HorizontalPodAutoscalerConditionType]autoscalingv2.HorizontalPodAutoscalerCondition{}
	for _, c := range hpa.Status.Conditions {
		byType[c.Type] = c
	}
	if c, ok := byType[autoscalingv2.ScalingLimited]; ok && c.Reason != "" {
		limited.Status, limited.Reason, limited.Message = metav1.ConditionStatus(c.Status), c.Reason, c.Message
	}
	able, ableOK := byType[autoscalingv2.AbleToScale]
	active, activeOK := byType[autoscalingv2.ScalingActive]
	for _, c := range []autoscalingv2.HorizontalPodAutoscalerCondition{able, active} {
		if c.Status == corev1.ConditionFalse && c.Reason != "" {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, c.Message
			return ready, limited
		}
	}
	if ableOK && activeOK && able.Status == corev1.ConditionTrue && active.Status == corev1.ConditionTrue {
		ready.Status, ready.Reason = metav1.ConditionTrue, computev1alpha.ReasonAutoscalerReady
		ready.Message = fmt.Sprintf("the autoscaler reads its metrics and scales between %d and %d replicas",
			ptr.Deref(hpa.Spec.MinReplicas, 1), hpa.Spec.MaxReplicas)
	}
	return ready, limited
}

// autoscalingStatus is status.autoscaling of a deployment that autoscales:
// the bounds of its settings and, from its HPA, the replicas the HPA wants
// and saw, when it last scaled, and each metric against its target. With
// no HPA of compute's acting, the replicas are the deployment's own
// (desired: the count it is held at; current: its Instances).
func autoscalingStatus(wd *computev1alpha.WorkloadDeployment, hpa *autoscalingv2.HorizontalPodAutoscaler) *computev1alpha.AutoscalingStatus {
	s := wd.Spec.ScaleSettings
	out := &computev1alpha.AutoscalingStatus{
		MinReplicas: s.MinReplicas,
		MaxReplicas: ptr.Deref(s.MaxReplicas, 0),
	}
	if hpa == nil {
		out.DesiredReplicas, out.CurrentReplicas = wd.Status.DesiredReplicas, wd.Status.Replicas
		return out
	}
	out.DesiredReplicas, out.CurrentReplicas = hpa.Status.DesiredReplicas, hpa.Status.CurrentReplicas
	if hpa.Status.LastScaleTime != nil {
		out.LastScaleTime = hpa.Status.LastScaleTime.DeepCopy()
	}
	out.Metrics = metricStatuses(s.Metrics, hpa.Status.CurrentMetrics)
	return out
}

// metricStatuses pairs each resource metric of the settings, in order,
// with the HPA's current reading of it; nil while the HPA has read none.
func metricStatuses(spec []computev1alpha.MetricSpec, current []autoscalingv2.MetricStatus) []computev1alpha.AutoscalingMetricStatus {
	if len(current) == 0 {
		return nil
	}
	out := make([]computev1alpha.AutoscalingMetricStatus, 0, len(spec))
	for _, m := range spec {
		if m.Resource == nil {
			continue
		}
		ms := computev1alpha.AutoscalingMetricStatus{Name: m.Resource.Name, Target: *m.Resource.Target.DeepCopy()}
		for _, c := range current {
			if c.Type != autoscalingv2.ResourceMetricSourceType || c.Resource == nil || c.Resource.Name != m.Resource.Name {
				continue
			}
			if u := c.Resource.Current.AverageUtilization; u != nil {
				ms.CurrentAverageUtilization = ptr.To(*u)
			}
			if v := c.Resource.Current.AverageValue; v != nil {
				ms.CurrentAverageValue = ptr.To(v.DeepCopy())
			}
		}
		out = append(out, ms)
	}
	if len(out) == 0 {
		// As the API server returns it (omitempty): no status churn.
		return nil
	}
	return out
}
