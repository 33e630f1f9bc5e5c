package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkContext condition types.
const (
	// NetworkContextConditionReady is True once the network is present in
	// the context's topology.
	NetworkContextConditionReady = "Ready"
)

// NetworkContextSpec is one network's presence in one topology.
type NetworkContextSpec struct {
	// Network that is present. Immutable.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="network is immutable"
	Network LocalNetworkRef `json:"network"`

	// Topology of the presence; the keys and values are unique among the
	// contexts of one network. Immutable.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="topology is immutable"
	Topology map[string]string `json:"topology"`
}

// NetworkContextStatus is the observed state of a NetworkContext.
type NetworkContextStatus struct {
	// Conditions: Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NetworkContext is a network's presence in one topology (a city): the
// networking service creates one for each distinct topology its
// NetworkBindings ask for.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network.name`
// +kubebuilder:printcolumn:name="City",type=string,JSONPath=`.spec.topology.topology\.datum\.net/city-code`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NetworkContext struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the network and the topology.
	Spec NetworkContextSpec `json:"spec"`
	// Status reports whether the network is present.
	Status NetworkContextStatus `json:"status,omitempty"`
}

// NetworkContextList is a list of NetworkContexts.
//
// +kubebuilder:object:root=true
type NetworkContextList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the contexts.
	Items []NetworkContext `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetworkContext{}, &NetworkContextList{})
}
