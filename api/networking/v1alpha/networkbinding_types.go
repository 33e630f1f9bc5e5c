package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkBinding condition types.
const (
	// NetworkBindingConditionReady is True once the binding is attached to a
	// NetworkContext and its consumer can expect a working network; False
	// with a reason when the networking service refuses it.
	NetworkBindingConditionReady = "Ready"
)

// NetworkBinding Ready reasons set by compute's networking stand-in (the
// networking service of a real installation may use others).
const (
	// NetworkBindingReasonBound means the binding is attached and holds its
	// addresses.
	NetworkBindingReasonBound = "Bound"
	// NetworkBindingReasonPending means the binding is not attached yet.
	NetworkBindingReasonPending = "Pending"
	// NetworkBindingReasonSubnetExhausted means the subnet of the network in
	// this location has no free address left.
	NetworkBindingReasonSubnetExhausted = "SubnetExhausted"
	// NetworkBindingReasonAddressPoolExhausted means the location's address
	// pool has no room for another subnet.
	NetworkBindingReasonAddressPoolExhausted = "AddressPoolExhausted"
	// NetworkBindingReasonInvalidTopology means the binding's topology does
	// not name a city.
	NetworkBindingReasonInvalidTopology = "InvalidTopology"
)

// NetworkBindingSpec says where a network is needed.
type NetworkBindingSpec struct {
	// Network the binding is for. Immutable.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="network is immutable"
	Network NetworkRef `json:"network"`

	// Topology is where the binding exists, as topology keys; the city code
	// lives under topology.datum.net/city-code. Each distinct topology of a
	// network gets one NetworkContext. Immutable.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="topology is immutable"
	Topology map[string]string `json:"topology"`
}

// NetworkContextRef names a NetworkContext in any namespace.
type NetworkContextRef struct {
	// Namespace of the network context.
	//
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	// Name of the network context.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// LocalNetworkContextRef names a NetworkContext in the same namespace.
type LocalNetworkContextRef struct {
	// Name of the network context.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// NetworkBindingAddress is an address the networking service assigned to
// the binding's consumer.
type NetworkBindingAddress struct {
	// Family of the address.
	Family IPFamily `json:"family"`

	// Address assigned, without a prefix length (10.128.0.2).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address"`

	// Gateway is the next hop of the subnet the address is in.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=45
	Gateway string `json:"gateway,omitempty"`

	// Subnet is the Subnet the address was taken from, in the binding's
	// namespace.
	//
	// +optional
	Subnet string `json:"subnet,omitempty"`
}

// NetworkBindingStatus is the observed state of a NetworkBinding.
type NetworkBindingStatus struct {
	// NetworkContextRef is the NetworkContext the binding is attached to.
	//
	// +optional
	NetworkContextRef *NetworkContextRef `json:"networkContextRef,omitempty"`

	// Addresses assigned to the binding's consumer, the primary first. A
	// compute extension of Datum's NetworkBinding: Datum hands addresses
	// out through NetworkInterfaces; compute's stand-in records them on the
	// binding of each Instance interface.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=4
	Addresses []NetworkBindingAddress `json:"addresses,omitempty"`

	// Conditions: Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NetworkBinding says "this network is needed here": compute creates one
// per Instance network interface in the Instance's cell, and the networking
// service attaches it to the network's NetworkContext for that city and
// reports it Ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network.name`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.addresses[0].address`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NetworkBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which network is needed where.
	Spec NetworkBindingSpec `json:"spec"`
	// Status reports the attachment and the addresses.
	Status NetworkBindingStatus `json:"status,omitempty"`
}

// NetworkBindingList is a list of NetworkBindings.
//
// +kubebuilder:object:root=true
type NetworkBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the bindings.
	Items []NetworkBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetworkBinding{}, &NetworkBindingList{})
}
