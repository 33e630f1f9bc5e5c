package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "quota.miloapis.com", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this group, for references, RBAC-free lookups and events.
const (
	ResourceClaimKind        = "ResourceClaim"
	ResourceGrantKind        = "ResourceGrant"
	AllowanceBucketKind      = "AllowanceBucket"
	ResourceRegistrationKind = "ResourceRegistration"
)
