package v1alpha

// IPFamily is an IP address family.
//
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

// IP families.
const (
	// IPv4Protocol is IPv4.
	IPv4Protocol IPFamily = "IPv4"
	// IPv6Protocol is IPv6.
	IPv6Protocol IPFamily = "IPv6"
)

// NetworkRef names a Network, possibly in another namespace.
type NetworkRef struct {
	// Namespace of the network; empty means the namespace of the object
	// holding the reference.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name of the network.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// LocalNetworkRef names a Network in the same namespace.
type LocalNetworkRef struct {
	// Name of the network.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
