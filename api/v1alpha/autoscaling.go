package v1alpha

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Autoscaling condition types, on a WorkloadDeployment (set by its cell),
// on each placement of the Workload and on the Workload (aggregated by the
// management plane). Both are present only while a placement autoscales
// (scaleSettings.maxReplicas and metrics set).
const (
	// ConditionAutoscalingReady is True while the city's autoscaler can
	// read its metrics and scale; False with the reason it cannot
	// (MetricsUnavailable, AutoscalerNotOwned, or the autoscaler's own
	// reason such as FailedGetResourceMetric); Unknown until it has
	// evaluated the current settings.
	ConditionAutoscalingReady = "AutoscalingReady"
	// ConditionAutoscalingLimited is True while the autoscaler wants more
	// than maxReplicas (TooManyReplicas) or fewer than minReplicas
	// (TooFewReplicas); False (DesiredWithinRange) otherwise.
	ConditionAutoscalingLimited = "AutoscalingLimited"
)

// Autoscaling reasons compute sets itself (the autoscaler's own reasons,
// such as FailedGetResourceMetric, TooManyReplicas or DesiredWithinRange,
// are passed through as the cell's HorizontalPodAutoscaler reports them).
const (
	// ReasonAwaitingAutoscaler means the autoscaler has not evaluated the
	// current scaling settings yet.
	ReasonAwaitingAutoscaler = "AwaitingAutoscaler"
	// ReasonAutoscalerReady means the autoscaler reads its metrics and can
	// scale between the bounds.
	ReasonAutoscalerReady = "AutoscalerReady"
	// ReasonMetricsUnavailable means the city's cell serves no resource
	// metrics API (no metrics pipeline, or a cell without a real node):
	// the deployment is held at minReplicas, never scaled on a guess.
	ReasonMetricsUnavailable = "MetricsUnavailable"
	// ReasonAutoscalerNotOwned means a HorizontalPodAutoscaler of the
	// deployment's name exists in the cell and was not created by compute:
	// it is left alone and nothing autoscales the deployment.
	ReasonAutoscalerNotOwned = "AutoscalerNotOwned"
	// ReasonAutoscalingSuspended means the deployment is suspended: its
	// autoscaler is removed until it resumes.
	ReasonAutoscalingSuspended = "AutoscalingSuspended"
	// ReasonAutoscalersReady means every city of the placement (or every
	// placement of the Workload) that autoscales has its autoscaler ready.
	ReasonAutoscalersReady = "AutoscalersReady"
	// ReasonWithinScalingLimits means no city's autoscaler is held by
	// minReplicas or maxReplicas.
	ReasonWithinScalingLimits = "WithinScalingLimits"
)

// AutoscalingStatus is what one city's autoscaler reports: the bounds it
// works in, the replicas it wants and has, and each metric against its
// target. Set on a WorkloadDeployment by its cell while its placement
// autoscales, and copied into the Workload's city status.
type AutoscalingStatus struct {
	// MinReplicas is the floor (the placement's minReplicas).
	MinReplicas int32 `json:"minReplicas"`

	// MaxReplicas is the ceiling (the placement's maxReplicas).
	MaxReplicas int32 `json:"maxReplicas"`

	// DesiredReplicas is the count the autoscaler last asked for.
	//
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas"`

	// CurrentReplicas is the count the autoscaler last saw.
	//
	// +optional
	CurrentReplicas int32 `json:"currentReplicas"`

	// LastScaleTime is when the autoscaler last changed the count.
	//
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`

	// Metrics are each metric's current value against its target, in the
	// order of the placement's metrics; empty while no metric has been
	// read.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Metrics []AutoscalingMetricStatus `json:"metrics,omitempty"`
}

// AutoscalingMetricStatus is one resource metric of a city's autoscaler.
type AutoscalingMetricStatus struct {
	// Name of the resource: cpu or memory.
	Name corev1.ResourceName `json:"name"`

	// Target is the metric's target, as the placement sets it.
	Target MetricTarget `json:"target"`

	// CurrentAverageUtilization is the current average over the
	// Instances, as a percentage of their requests.
	//
	// +optional
	CurrentAverageUtilization *int32 `json:"currentAverageUtilization,omitempty"`

	// CurrentAverageValue is the current average over the Instances.
	//
	// +optional
	CurrentAverageValue *resource.Quantity `json:"currentAverageValue,omitempty"`
}

// Autoscales reports whether the settings ask for autoscaling: a ceiling
// and at least one metric.
func (s HorizontalScaleSettings) Autoscales() bool {
	return s.MaxReplicas != nil && len(s.Metrics) > 0
}
