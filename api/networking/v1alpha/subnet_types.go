package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Subnet and SubnetClaim condition types.
const (
	// SubnetConditionAllocated is True once a prefix is allocated.
	SubnetConditionAllocated = "Allocated"
	// SubnetConditionProgrammed is True once the data plane carries the
	// subnet.
	SubnetConditionProgrammed = "Programmed"
	// SubnetConditionReady is True once the subnet can be used.
	SubnetConditionReady = "Ready"
)

// LocalSubnetReference names a Subnet in the same namespace.
type LocalSubnetReference struct {
	// Name of the subnet.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SubnetClaimSpec asks for a subnet in a network context.
type SubnetClaimSpec struct {
	// SubnetClass is the class of subnet required, e.g. "private".
	//
	// +kubebuilder:validation:MinLength=1
	SubnetClass string `json:"subnetClass"`

	// NetworkContext to claim a subnet in.
	NetworkContext LocalNetworkContextRef `json:"networkContext"`

	// Location the subnet is for.
	Location LocationReference `json:"location"`

	// IPFamily of the subnet.
	IPFamily IPFamily `json:"ipFamily"`

	// StartAddress asks for a specific prefix start.
	//
	// +optional
	StartAddress *string `json:"startAddress,omitempty"`

	// PrefixLength asks for a specific prefix length.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=128
	PrefixLength *int32 `json:"prefixLength,omitempty"`
}

// SubnetClaimStatus is the observed state of a SubnetClaim.
type SubnetClaimStatus struct {
	// SubnetRef is the Subnet allocated to the claim.
	//
	// +optional
	SubnetRef *LocalSubnetReference `json:"subnetRef,omitempty"`

	// StartAddress of the allocated subnet.
	//
	// +optional
	StartAddress *string `json:"startAddress,omitempty"`

	// PrefixLength of the allocated subnet.
	//
	// +optional
	PrefixLength *int32 `json:"prefixLength,omitempty"`

	// Conditions: Allocated, Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SubnetClaim asks the networking service for a subnet of a network
// context.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Subnet",type=string,JSONPath=`.status.subnetRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SubnetClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what subnet is needed.
	Spec SubnetClaimSpec `json:"spec"`
	// Status reports the allocated subnet.
	Status SubnetClaimStatus `json:"status,omitempty"`
}

// SubnetClaimList is a list of SubnetClaims.
//
// +kubebuilder:object:root=true
type SubnetClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the claims.
	Items []SubnetClaim `json:"items"`
}

// SubnetSpec is an allocated prefix of a network context.
type SubnetSpec struct {
	// SubnetClass is the class of the subnet.
	//
	// +kubebuilder:validation:MinLength=1
	SubnetClass string `json:"subnetClass"`

	// NetworkContext the subnet belongs to.
	NetworkContext LocalNetworkContextRef `json:"networkContext"`

	// Location the subnet is for.
	Location LocationReference `json:"location"`

	// IPFamily of the subnet.
	IPFamily IPFamily `json:"ipFamily"`

	// StartAddress is the first address of the prefix.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=45
	StartAddress string `json:"startAddress"`

	// PrefixLength of the prefix.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=128
	PrefixLength int32 `json:"prefixLength"`
}

// SubnetStatus is the observed state of a Subnet.
type SubnetStatus struct {
	// StartAddress of the programmed prefix.
	//
	// +optional
	StartAddress *string `json:"startAddress,omitempty"`

	// PrefixLength of the programmed prefix.
	//
	// +optional
	PrefixLength *int32 `json:"prefixLength,omitempty"`

	// Conditions: Allocated, Programmed, Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a prefix allocated to a network context in a location.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Start Address",type=string,JSONPath=`.spec.startAddress`
// +kubebuilder:printcolumn:name="Prefix Length",type=integer,JSONPath=`.spec.prefixLength`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Subnet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the prefix.
	Spec SubnetSpec `json:"spec"`
	// Status reports whether it is programmed.
	Status SubnetStatus `json:"status,omitempty"`
}

// SubnetList is a list of Subnets.
//
// +kubebuilder:object:root=true
type SubnetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the subnets.
	Items []Subnet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SubnetClaim{}, &SubnetClaimList{}, &Subnet{}, &SubnetList{})
}
