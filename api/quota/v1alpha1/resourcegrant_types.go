package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceGrant condition types.
const (
	// ResourceGrantConditionActive is True once the grant's allowances count
	// towards its consumer's bucket limits.
	ResourceGrantConditionActive = "Active"
)

// ResourceGrant Active reasons.
const (
	// ResourceGrantReasonGrantActive means the grant is validated and counted.
	ResourceGrantReasonGrantActive = "GrantActive"
	// ResourceGrantReasonValidationFailed means the grant references an
	// unknown resource type or the wrong consumer kind.
	ResourceGrantReasonValidationFailed = "ValidationFailed"
	// ResourceGrantReasonGrantPending means the grant has not been processed
	// yet.
	ResourceGrantReasonGrantPending = "GrantPending"
)

// Bucket is one slice of capacity within an allowance.
type Bucket struct {
	// Amount granted, in the registration's base unit.
	// +kubebuilder:validation:Minimum=0
	Amount int64 `json:"amount"`
}

// Allowance grants capacity for one resource type.
type Allowance struct {
	// ResourceType must equal the spec.resourceType of a ResourceRegistration.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ResourceType string `json:"resourceType"`

	// Buckets of capacity; their amounts add up to the allowance.
	// +kubebuilder:validation:MinItems=1
	Buckets []Bucket `json:"buckets"`
}

// ResourceGrantSpec is the capacity a grant gives and to whom.
type ResourceGrantSpec struct {
	// ConsumerRef is the consumer receiving the capacity.
	ConsumerRef ConsumerRef `json:"consumerRef"`

	// Allowances, one or more per resource type.
	// +kubebuilder:validation:MinItems=1
	Allowances []Allowance `json:"allowances"`
}

// ResourceGrantStatus reports whether the grant counts.
type ResourceGrantStatus struct {
	// ObservedGeneration is the grant generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Active (see the ResourceGrantReason constants).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.type == 'Active' ? c.reason in ['GrantActive', 'ValidationFailed', 'GrantPending'] : true)",message="Active condition reason must be one of GrantActive, ValidationFailed, GrantPending"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceGrant gives a consumer capacity for one or more resource types.
// The limit of a bucket is the sum of all active grants for its consumer and
// resource type.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Consumer",type=string,JSONPath=`.spec.consumerRef.name`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceGrant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the capacity granted.
	Spec ResourceGrantSpec `json:"spec"`
	// Status reports whether the grant counts.
	Status ResourceGrantStatus `json:"status,omitempty"`
}

// ResourceGrantList is a list of ResourceGrants.
//
// +kubebuilder:object:root=true
type ResourceGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the grants.
	Items []ResourceGrant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceGrant{}, &ResourceGrantList{})
}
