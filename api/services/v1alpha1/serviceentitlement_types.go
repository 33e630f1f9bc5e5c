package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceEntitlement condition types.
const (
	// ServiceEntitlementConditionReady is True once the project may use the
	// service.
	ServiceEntitlementConditionReady = "Ready"
)

// EntitlementPhase is the lifecycle state of a ServiceEntitlement.
// +kubebuilder:validation:Enum=PendingApproval;Active;Rejected
type EntitlementPhase string

// Entitlement phases. An entitlement with no phase yet has not been
// processed: treat it like PendingApproval (activating).
const (
	// EntitlementPhasePendingApproval means the request is being activated
	// or awaits the provider's approval.
	EntitlementPhasePendingApproval EntitlementPhase = "PendingApproval"
	// EntitlementPhaseActive means the project may use the service.
	EntitlementPhaseActive EntitlementPhase = "Active"
	// EntitlementPhaseRejected means the provider denied the request.
	EntitlementPhaseRejected EntitlementPhase = "Rejected"
)

// ServiceRef names a catalog service.
type ServiceRef struct {
	// Name of the service, e.g. "compute.datumapis.com".
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ServiceEntitlementSpec is the service a project asks to use.
type ServiceEntitlementSpec struct {
	// ServiceRef is the requested service. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceRef is immutable"
	ServiceRef ServiceRef `json:"serviceRef"`

	// RequestMessage is shown to the provider when the service needs its
	// approval.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	RequestMessage string `json:"requestMessage,omitempty"`
}

// ServiceEntitlementStatus is the observed state of a ServiceEntitlement.
type ServiceEntitlementStatus struct {
	// ObservedGeneration is the entitlement generation this status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the lifecycle state; empty until first processed.
	// +optional
	Phase EntitlementPhase `json:"phase,omitempty"`

	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceEntitlement is a project's request to use one catalog service. It
// lives in the project's control plane (cluster-scoped there), one per
// service; its existence means "requested", its phase and Ready condition
// say whether the service is active yet.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.serviceRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ServiceEntitlement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested service.
	Spec ServiceEntitlementSpec `json:"spec"`
	// Status says whether it is active.
	Status ServiceEntitlementStatus `json:"status,omitempty"`
}

// ServiceEntitlementList is a list of ServiceEntitlements.
//
// +kubebuilder:object:root=true
type ServiceEntitlementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the entitlements.
	Items []ServiceEntitlement `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceEntitlement{}, &ServiceEntitlementList{})
}
