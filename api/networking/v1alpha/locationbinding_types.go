package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocationBinding condition types.
const (
	// LocationBindingConditionReady is True while the binding is in force.
	// compute decides from the bound Location's Ready condition, not from
	// this one.
	LocationBindingConditionReady = "Ready"
)

// LocationReference names a Location.
type LocationReference struct {
	// Name of the Location.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the Location.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// LocationBindingSpec names the Location a project may use.
type LocationBindingSpec struct {
	// LocationRef is the bound Location. Immutable: bind another location
	// with another LocationBinding.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="locationRef is immutable"
	LocationRef LocationReference `json:"locationRef"`
}

// LocationBindingStatus is the observed state of a LocationBinding.
type LocationBindingStatus struct {
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LocationBinding says "the project owning this namespace may use this
// Location". There is one per project namespace and Location; a Workload may
// only place replicas in cities of bound, Ready Locations.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.spec.locationRef.name`
// +kubebuilder:printcolumn:name="Location Namespace",type=string,JSONPath=`.spec.locationRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LocationBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the bound Location.
	Spec LocationBindingSpec `json:"spec"`
	// Status reports whether the binding is in force.
	Status LocationBindingStatus `json:"status,omitempty"`
}

// LocationBindingList is a list of LocationBindings.
//
// +kubebuilder:object:root=true
type LocationBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the bindings.
	Items []LocationBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LocationBinding{}, &LocationBindingList{})
}
