package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContributingGrantRef names a ResourceGrant counted in a bucket's limit.
type ContributingGrantRef struct {
	// Name of the ResourceGrant.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// LastObservedGeneration is the grant generation the bucket counted.
	LastObservedGeneration int64 `json:"lastObservedGeneration"`

	// Amount the grant contributes, in the registration's base unit.
	// +kubebuilder:validation:Minimum=0
	Amount int64 `json:"amount"`
}

// AllowanceBucketSpec identifies the ledger: one consumer, one resource type.
type AllowanceBucketSpec struct {
	// ConsumerRef is the consumer whose capacity the bucket tracks.
	ConsumerRef ConsumerRef `json:"consumerRef"`

	// ResourceType the bucket tracks.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ResourceType string `json:"resourceType"`
}

// AllowanceBucketStatus holds the aggregated figures of the bucket. It tracks
// totals only, never individual claims, so it stays small at any scale.
type AllowanceBucketStatus struct {
	// ObservedGeneration is the bucket generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Limit is the sum of all active grants.
	// +kubebuilder:validation:Minimum=0
	Limit int64 `json:"limit"`

	// Allocated is the sum of all granted claims.
	// +kubebuilder:validation:Minimum=0
	Allocated int64 `json:"allocated"`

	// Available is Limit - Allocated, never below zero.
	// +kubebuilder:validation:Minimum=0
	Available int64 `json:"available"`

	// ClaimCount is the number of granted claims in the bucket.
	// +kubebuilder:validation:Minimum=0
	ClaimCount int32 `json:"claimCount"`

	// GrantCount is the number of grants contributing to Limit.
	// +kubebuilder:validation:Minimum=0
	GrantCount int32 `json:"grantCount"`

	// ContributingGrantRefs lists the grants counted in Limit.
	// +optional
	// +listType=map
	// +listMapKey=name
	ContributingGrantRefs []ContributingGrantRef `json:"contributingGrantRefs,omitempty"`

	// LastReconciliation is when the figures were last recomputed.
	// +optional
	LastReconciliation *metav1.Time `json:"lastReconciliation,omitempty"`
}

// AllowanceBucket is the quota ledger for one consumer × resource type: the
// single source of truth for its limit and usage. The quota system creates
// and maintains buckets; nobody else writes them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Consumer",type=string,JSONPath=`.spec.consumerRef.name`
// +kubebuilder:printcolumn:name="Resource Type",type=string,JSONPath=`.spec.resourceType`
// +kubebuilder:printcolumn:name="Limit",type=integer,JSONPath=`.status.limit`
// +kubebuilder:printcolumn:name="Allocated",type=integer,JSONPath=`.status.allocated`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.available`
// +kubebuilder:printcolumn:name="Claims",type=integer,JSONPath=`.status.claimCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AllowanceBucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec identifies the bucket.
	Spec AllowanceBucketSpec `json:"spec"`
	// Status holds its figures.
	Status AllowanceBucketStatus `json:"status,omitempty"`
}

// AllowanceBucketList is a list of AllowanceBuckets.
//
// +kubebuilder:object:root=true
type AllowanceBucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the buckets.
	Items []AllowanceBucket `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AllowanceBucket{}, &AllowanceBucketList{})
}
