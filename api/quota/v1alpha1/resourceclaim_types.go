package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceClaim condition types.
const (
	// ResourceClaimConditionGranted is True once every request of the claim
	// has been allocated, and False while it is pending or after it was
	// denied; the reason says which.
	ResourceClaimConditionGranted = "Granted"
)

// ResourceClaim Granted reasons. These are the only reasons the API server
// accepts on the Granted condition.
const (
	// ResourceClaimReasonQuotaAvailable means every request was allocated.
	ResourceClaimReasonQuotaAvailable = "QuotaAvailable"
	// ResourceClaimReasonQuotaExceeded means at least one request did not fit
	// in its bucket, so the whole claim was denied.
	ResourceClaimReasonQuotaExceeded = "QuotaExceeded"
	// ResourceClaimReasonValidationFailed means the claim could not be
	// evaluated: unknown or inactive resource type, wrong consumer kind, or a
	// claiming resource the registration does not allow.
	ResourceClaimReasonValidationFailed = "ValidationFailed"
	// ResourceClaimReasonPendingEvaluation means the claim has not been
	// evaluated yet. New claims start here.
	ResourceClaimReasonPendingEvaluation = "PendingEvaluation"
)

// AllocationStatus is the outcome of one request of a claim.
// +kubebuilder:validation:Enum=Granted;Denied;Pending
type AllocationStatus string

// Allocation outcomes.
const (
	// AllocationGranted means the amount is reserved in the bucket.
	AllocationGranted AllocationStatus = "Granted"
	// AllocationDenied means the request could not be satisfied.
	AllocationDenied AllocationStatus = "Denied"
	// AllocationPending means the request has not been evaluated yet.
	AllocationPending AllocationStatus = "Pending"
)

// ResourceRequest asks for an amount of one resource type.
type ResourceRequest struct {
	// ResourceType must equal the spec.resourceType of an active
	// ResourceRegistration, e.g. "compute.datumapis.com/instances".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ResourceType string `json:"resourceType"`

	// Amount in the registration's base unit (1 for an entity, millicores,
	// MiB, ...). Zero asks for nothing.
	// +kubebuilder:validation:Minimum=0
	Amount int64 `json:"amount"`
}

// ResourceClaimSpec is what a claim asks for and on whose behalf.
type ResourceClaimSpec struct {
	// ConsumerRef is the consumer whose buckets pay for the claim. Its kind
	// must match the consumer type of every requested registration.
	ConsumerRef ConsumerRef `json:"consumerRef"`

	// Requests are evaluated atomically: either all are granted or the
	// claim is denied. Each resource type may appear once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=resourceType
	Requests []ResourceRequest `json:"requests"`

	// ResourceRef is the object that triggered the claim. Its kind must be
	// listed in the claimingResources of every requested registration.
	ResourceRef UnversionedObjectReference `json:"resourceRef"`
}

// RequestAllocation reports the outcome of one request of the claim.
type RequestAllocation struct {
	// ResourceType of the request this entry reports on.
	// +kubebuilder:validation:MinLength=1
	ResourceType string `json:"resourceType"`

	// Status of the request.
	Status AllocationStatus `json:"status"`

	// Reason is a machine-readable explanation, e.g. QuotaAvailable or
	// QuotaExceeded.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message explains the outcome to a human.
	// +optional
	Message string `json:"message,omitempty"`

	// AllocatedAmount is the amount reserved: the requested amount when
	// Granted, otherwise zero (partial allocation does not exist).
	// +kubebuilder:validation:Minimum=0
	// +optional
	AllocatedAmount int64 `json:"allocatedAmount,omitempty"`

	// AllocatingBucket is the name of the AllowanceBucket the amount was
	// reserved in; set only when Granted.
	// +optional
	AllocatingBucket string `json:"allocatingBucket,omitempty"`

	// LastTransitionTime is when Status, Reason or Message last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// ResourceClaimStatus is the quota system's answer to a claim.
type ResourceClaimStatus struct {
	// ObservedGeneration is the claim generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Allocations holds one entry per request.
	// +optional
	// +listType=map
	// +listMapKey=resourceType
	Allocations []RequestAllocation `json:"allocations,omitempty"`

	// Conditions: Granted (see the ResourceClaimReason constants).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.type == 'Granted' ? c.reason in ['QuotaAvailable', 'QuotaExceeded', 'ValidationFailed', 'PendingEvaluation'] : true)",message="Granted condition reason must be one of QuotaAvailable, QuotaExceeded, ValidationFailed, PendingEvaluation"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceClaim asks the quota system to reserve capacity for one object
// (for compute: one Instance) from the consumer's AllowanceBuckets. The
// reservation lasts until the claim is deleted.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Granted",type=string,JSONPath=`.status.conditions[?(@.type=="Granted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Granted")].reason`
// +kubebuilder:printcolumn:name="Consumer",type=string,JSONPath=`.spec.consumerRef.name`,priority=1
// +kubebuilder:printcolumn:name="Resource",type=string,JSONPath=`.spec.resourceRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the claim asks for.
	Spec ResourceClaimSpec `json:"spec"`
	// Status is the quota system's answer. A claim nobody has evaluated
	// reads as Granted=False/PendingEvaluation.
	// +kubebuilder:default={conditions: {{type: "Granted", status: "False", reason: "PendingEvaluation", message: "Awaiting capacity evaluation", lastTransitionTime: "1970-01-01T00:00:00Z"}}}
	Status ResourceClaimStatus `json:"status,omitempty"`
}

// ResourceClaimList is a list of ResourceClaims.
//
// +kubebuilder:object:root=true
type ResourceClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the claims.
	Items []ResourceClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceClaim{}, &ResourceClaimList{})
}
