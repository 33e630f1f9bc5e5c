package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceRegistration condition types.
const (
	// ResourceRegistrationConditionActive is True once grants and claims may
	// use the registered resource type.
	ResourceRegistrationConditionActive = "Active"
)

// ResourceRegistration Active reasons.
const (
	// ResourceRegistrationReasonRegistrationActive means the registration is
	// validated and usable.
	ResourceRegistrationReasonRegistrationActive = "RegistrationActive"
	// ResourceRegistrationReasonValidationFailed means the specification is
	// invalid; the message says why.
	ResourceRegistrationReasonValidationFailed = "ValidationFailed"
	// ResourceRegistrationReasonRegistrationPending means the registration
	// has not been processed yet.
	ResourceRegistrationReasonRegistrationPending = "RegistrationPending"
)

// RegistrationType says how a resource type is measured.
// +kubebuilder:validation:Enum=Entity;Allocation
type RegistrationType string

// Registration types.
const (
	// RegistrationTypeEntity counts objects: each claim asks for whole units
	// (one Instance, one Project).
	RegistrationTypeEntity RegistrationType = "Entity"
	// RegistrationTypeAllocation measures capacity: claims ask for amounts
	// (millicores, MiB).
	RegistrationTypeAllocation RegistrationType = "Allocation"
)

// ConsumerTypeRef names the kind of object that receives grants and makes
// claims for a registered resource type.
type ConsumerTypeRef struct {
	// APIGroup of the consumer kind, e.g. "resourcemanager.miloapis.com".
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	APIGroup string `json:"apiGroup"`

	// Kind of the consumer, e.g. "Project".
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// ClaimingResource names a kind whose objects may trigger claims for a
// registered resource type.
type ClaimingResource struct {
	// APIGroup of the claiming kind; empty for the core group.
	// +optional
	// +kubebuilder:validation:Pattern=`^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	APIGroup string `json:"apiGroup,omitempty"`

	// Kind of the claiming object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// ResourceRegistrationSpec describes a quota-tracked resource type.
type ResourceRegistrationSpec struct {
	// ConsumerTypeRef is the kind that receives grants and makes claims.
	// Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="consumerTypeRef is immutable"
	ConsumerTypeRef ConsumerTypeRef `json:"consumerTypeRef"`

	// Type says whether the resource is counted (Entity) or measured
	// (Allocation). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type RegistrationType `json:"type"`

	// ResourceType is the identifier grants and claims use, e.g.
	// "compute.datumapis.com/vcpus". Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="resourceType is immutable"
	ResourceType string `json:"resourceType"`

	// Description tells a human what is tracked.
	// +optional
	// +kubebuilder:validation:MaxLength=500
	Description string `json:"description,omitempty"`

	// BaseUnit is the unit every amount is expressed in, e.g. "millicore".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	BaseUnit string `json:"baseUnit"`

	// DisplayUnit is the unit shown to people, e.g. "core".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	DisplayUnit string `json:"displayUnit"`

	// UnitConversionFactor converts base to display units:
	// display = base / factor.
	// +kubebuilder:validation:Minimum=1
	UnitConversionFactor int64 `json:"unitConversionFactor"`

	// ClaimingResources are the kinds allowed to trigger claims. Empty means
	// no kind may (claims are then made by administrators only).
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	ClaimingResources []ClaimingResource `json:"claimingResources,omitempty"`
}

// ResourceRegistrationStatus reports whether the registration is usable.
type ResourceRegistrationStatus struct {
	// ObservedGeneration is the registration generation this status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Active (see the ResourceRegistrationReason constants).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.type == 'Active' ? c.reason in ['RegistrationActive', 'ValidationFailed', 'RegistrationPending'] : true)",message="Active condition reason must be one of RegistrationActive, ValidationFailed, RegistrationPending"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceRegistration makes a resource type quota-tracked: it fixes the
// unit, the consumer kind that pays, and the kinds allowed to claim.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Resource Type",type=string,JSONPath=`.spec.resourceType`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Consumer",type=string,JSONPath=`.spec.consumerTypeRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Unit",type=string,JSONPath=`.spec.baseUnit`,priority=1
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceRegistration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the resource type.
	Spec ResourceRegistrationSpec `json:"spec"`
	// Status reports whether it is usable.
	Status ResourceRegistrationStatus `json:"status,omitempty"`
}

// ResourceRegistrationList is a list of ResourceRegistrations.
//
// +kubebuilder:object:root=true
type ResourceRegistrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the registrations.
	Items []ResourceRegistration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceRegistration{}, &ResourceRegistrationList{})
}
