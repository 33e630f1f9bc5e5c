package v1alpha1

// ConsumerRef names the quota consumer: the object that receives
// ResourceGrants and on whose behalf ResourceClaims are made (for compute, a
// resourcemanager.miloapis.com Project).
type ConsumerRef struct {
	// APIGroup of the consumer, e.g. "resourcemanager.miloapis.com". Empty
	// means the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// Kind of the consumer, e.g. "Project" or "Organization".
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Name of the consumer.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the consumer; empty for cluster-scoped consumers such as
	// Projects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// UnversionedObjectReference names an object by group, kind, name and
// (optionally) namespace, without a version, so it stays valid across API
// versions of the referenced kind.
type UnversionedObjectReference struct {
	// APIGroup of the referenced object. Empty means the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// Kind of the referenced object.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the referenced object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}
