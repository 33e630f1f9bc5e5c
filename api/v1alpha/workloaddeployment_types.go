package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadDeploymentSpec is one placement of a Workload in one city.
type WorkloadDeploymentSpec struct {
	// WorkloadRef names the Workload this deployment belongs to. Immutable.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef WorkloadReference `json:"workloadRef"`

	// PlacementName is the Workload placement this deployment realises.
	// Immutable.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="placementName is immutable"
	PlacementName string `json:"placementName"`

	// CityCode is the city the deployment runs in. Immutable.
	//
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cityCode is immutable"
	CityCode string `json:"cityCode"`

	// LocationRef is the Location the deployment runs in (Datum's field).
	// Deployments created before placement by Location have none until
	// their Workload's controller adds it; their city code still routes
	// them.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="locationRef is immutable"
	LocationRef *LocationReference `json:"locationRef,omitempty"`

	// Template every Instance is created from.
	//
	// +required
	Template InstanceTemplateSpec `json:"template"`

	// ScaleSettings bound the replicas and choose the ordering policy.
	//
	// +required
	ScaleSettings HorizontalScaleSettings `json:"scaleSettings"`

	// Replicas overrides scaleSettings.minReplicas when set (scale
	// subresource). While the placement autoscales, the city's autoscaler
	// sets it in the cell, between minReplicas and maxReplicas, and the
	// cell's value is kept when the federation plane updates the
	// deployment.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// RolloutStrategy bounds template rollouts.
	//
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// WorkloadDeploymentStatus is the observed state of a deployment's Instances.
type WorkloadDeploymentStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available, Progressing, ReplicasReady (and Federated on
	// the project copy).
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	ReplicaCounts `json:",inline"`

	// Location the deployment runs in.
	//
	// +optional
	Location *LocationReference `json:"location,omitempty"`

	// Selector is the label selector of the deployment's Instances (scale
	// subresource).
	//
	// +optional
	Selector string `json:"selector,omitempty"`

	// TemplateHash is the hash of the desired instance template.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// LastSeenTime is set on the project copy while the cell running the
	// deployment is unreachable: the last time the cell was heard from.
	// The counts are then the last known ones and the conditions are
	// Unknown with reason CellUnreachable. Cleared when the cell is heard
	// from again.
	//
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`

	// Suspended is true while the deployment is suspended (annotation
	// compute.datumapis.com/suspended) and every one of its Instances has
	// stopped. Set by the cell; the hub and project copies report what the
	// cell reported.
	//
	// +optional
	Suspended bool `json:"suspended,omitempty"`

	// NotReady names the Instances of the current template that are not
	// ready for the worst reason any of them reports (the reason and
	// message the CLI and the Workload's city status show). Set by the
	// cell; the hub and project copies report what the cell reported.
	//
	// +optional
	NotReady *InstanceBlockers `json:"notReady,omitempty"`

	// Autoscaling is what the city's autoscaler reports while the
	// placement autoscales (scaleSettings.maxReplicas and metrics); unset
	// otherwise. Set by the cell; the hub and project copies report what
	// the cell reported.
	//
	// +optional
	Autoscaling *AutoscalingStatus `json:"autoscaling,omitempty"`
}

// WorkloadDeployment runs one placement of a Workload in one city.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=compute,shortName=wd
// +kubebuilder:printcolumn:name="City",type=string,JSONPath=`.spec.cityCode`
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placementName`,priority=1
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadRef.name`,priority=1
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the placement and template to run.
	//
	// +required
	Spec WorkloadDeploymentSpec `json:"spec"`

	// Status reports the deployment's Instances.
	//
	// +optional
	Status WorkloadDeploymentStatus `json:"status,omitempty"`
}

// WorkloadDeploymentList is a list of WorkloadDeployments.
//
// +kubebuilder:object:root=true
type WorkloadDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WorkloadDeployments.
	Items []WorkloadDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadDeployment{}, &WorkloadDeploymentList{})
}
