package v1alpha

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "compute.datumapis.com", Version: "v1alpha"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this group, for owner references and events.
const (
	WorkloadKind           = "Workload"
	WorkloadDeploymentKind = "WorkloadDeployment"
	InstanceKind           = "Instance"
	InstanceTypeKind       = "InstanceType"
)
