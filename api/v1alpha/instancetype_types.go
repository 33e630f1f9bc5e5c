package v1alpha

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstanceTypeLifecyclePhase is where an InstanceType is in its life: it is
// Active, then Deprecated, then Disabled, and never goes back.
type InstanceTypeLifecyclePhase string

// Lifecycle phases of an InstanceType.
const (
	// InstanceTypePhaseActive types serve new and existing Workloads.
	InstanceTypePhaseActive InstanceTypeLifecyclePhase = "Active"
	// InstanceTypePhaseDeprecated types still serve, with a condition on
	// every Workload using them that names the replacement.
	InstanceTypePhaseDeprecated InstanceTypeLifecyclePhase = "Deprecated"
	// InstanceTypePhaseDisabled types refuse new Workloads; existing ones
	// keep running and report the replacement.
	InstanceTypePhaseDisabled InstanceTypeLifecyclePhase = "Disabled"
)

// InstanceTypeLifecycle is the operator-declared lifecycle of an
// InstanceType.
type InstanceTypeLifecycle struct {
	// Phase is Active, Deprecated or Disabled. A type is created Active and
	// only moves forward: Active to Deprecated to Disabled.
	//
	// +kubebuilder:validation:Enum=Active;Deprecated;Disabled
	// +kubebuilder:validation:Required
	Phase InstanceTypeLifecyclePhase `json:"phase"`

	// ReplacementInstanceType names the InstanceType Workloads should move
	// to; it is required once the type is Deprecated or Disabled.
	//
	// +kubebuilder:validation:Optional
	ReplacementInstanceType string `json:"replacementInstanceType,omitempty"`
}

// InstanceTypeResources are the compute dimensions an InstanceType
// provides. Both are immutable: quota already claimed and Instances already
// running were sized by them.
type InstanceTypeResources struct {
	// CPU is the vCPU the type provides (e.g. "1" or "1000m").
	//
	// +kubebuilder:validation:Required
	CPU resource.Quantity `json:"cpu"`

	// Memory is the memory the type provides (e.g. "2Gi").
	//
	// +kubebuilder:validation:Required
	Memory resource.Quantity `json:"memory"`
}

// InstanceTypeSpec is the desired state of an InstanceType.
type InstanceTypeSpec struct {
	// DisplayName is a name for humans.
	//
	// +kubebuilder:validation:Optional
	DisplayName string `json:"displayName,omitempty"`

	// Description says what the type is for.
	//
	// +kubebuilder:validation:Optional
	Description string `json:"description,omitempty"`

	// Resources are the vCPU and memory the type provides.
	//
	// +kubebuilder:validation:Required
	Resources InstanceTypeResources `json:"resources"`

	// Lifecycle is the operator-managed lifecycle of the type.
	//
	// +kubebuilder:validation:Required
	Lifecycle InstanceTypeLifecycle `json:"lifecycle,omitempty"`
}

// InstanceTypeStatus is the observed state of an InstanceType.
type InstanceTypeStatus struct {
	// DeprecatedAt is when the type entered the Deprecated phase; the
	// InstanceType controller records it the first time it sees the type
	// Deprecated (an operator may set it through the status subresource).
	// Admission refuses Disabled until the grace period has passed since.
	//
	// +optional
	DeprecatedAt *metav1.Time `json:"deprecatedAt,omitempty"`

	// Conditions: Ready.
	//
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// InstanceType condition types and reasons.
const (
	// InstanceTypeConditionReady is True while the type may be used: it is
	// Active or Deprecated, and its replacement, if it names one, exists and
	// is not Disabled.
	InstanceTypeConditionReady = "Ready"
	// InstanceTypeReasonValid is the Ready=True reason.
	InstanceTypeReasonValid = "Valid"
	// InstanceTypeReasonDisabled means the type is Disabled (Ready=False).
	InstanceTypeReasonDisabled = "Disabled"
	// InstanceTypeReasonReplacementNotFound means the named replacement does
	// not exist (Ready=False).
	InstanceTypeReasonReplacementNotFound = "ReplacementNotFound"
	// InstanceTypeReasonReplacementDisabled means the named replacement is
	// Disabled (Ready=False).
	InstanceTypeReasonReplacementDisabled = "ReplacementDisabled"
)

// Conditions a Workload carries while the InstanceType its template names
// is not Active. Type and reason are the same string, and the message names
// the replacement.
const (
	// InstanceTypeConditionDeprecated is True on a Workload whose
	// InstanceType is Deprecated.
	InstanceTypeConditionDeprecated = "InstanceTypeDeprecated"
	// InstanceTypeConditionDisabled is True on a Workload whose InstanceType
	// is Disabled.
	InstanceTypeConditionDisabled = "InstanceTypeDisabled"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.spec.lifecycle.phase`
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.spec.resources.cpu`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.spec.resources.memory`
// +kubebuilder:printcolumn:name="Replacement",type=string,JSONPath=`.spec.lifecycle.replacementInstanceType`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// InstanceType is one machine shape of the platform's catalog: the vCPU and
// memory a Workload template gets when it names the type in
// spec.runtime.resources.instanceType, and the type's lifecycle.
type InstanceType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstanceTypeSpec   `json:"spec,omitempty"`
	Status InstanceTypeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// InstanceTypeList is a list of InstanceTypes.
type InstanceTypeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InstanceType `json:"items"`
}

func init() {
	SchemeBuilder.Register(&InstanceType{}, &InstanceTypeList{})
}
