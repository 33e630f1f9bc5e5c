package v1alpha

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CityCodeTopologyKey is the spec.topology key holding a Location's
// airport-style city code (DFW, LHR, ...). The same key labels cells and
// federated objects for city routing.
const CityCodeTopologyKey = "topology.datum.net/city-code"

// Location condition types.
const (
	// LocationConditionReady is True while the Location accepts workloads.
	LocationConditionReady = "Ready"
)

// Location class names.
const (
	// LocationClassDatumManaged is a Location whose infrastructure Datum
	// operates.
	LocationClassDatumManaged = "datum-managed"
	// LocationClassSelfManaged is a Location whose infrastructure the
	// customer operates.
	LocationClassSelfManaged = "self-managed"
)

// LocationSpec describes a point of presence.
type LocationSpec struct {
	// LocationClassName selects the control-plane behaviour for entities in
	// the location, e.g. "datum-managed" or "self-managed".
	// +kubebuilder:validation:MinLength=1
	LocationClassName string `json:"locationClassName"`

	// Topology holds arbitrary topology keys. The city code lives under
	// "topology.datum.net/city-code" (CityCodeTopologyKey).
	Topology map[string]string `json:"topology"`

	// Provider says which infrastructure serves the location.
	// +optional
	Provider LocationProvider `json:"provider,omitempty"`
}

// LocationProvider says which infrastructure serves a location. At most one
// member is set; an empty provider means the location is served by a cell
// that needs no provider settings (as in the local platform).
// +kubebuilder:validation:MaxProperties=1
type LocationProvider struct {
	// GCP settings when Google Cloud serves the location.
	// +optional
	GCP *GCPLocationProvider `json:"gcp,omitempty"`
}

// GCPLocationProvider is where in Google Cloud a location runs.
type GCPLocationProvider struct {
	// ProjectID is the GCP project serving the location.
	// +kubebuilder:validation:MinLength=1
	ProjectID string `json:"projectId"`

	// Region is the GCP region serving the location.
	// +kubebuilder:validation:MinLength=1
	Region string `json:"region"`

	// Zone is the GCP zone serving the location.
	// +kubebuilder:validation:MinLength=1
	Zone string `json:"zone"`
}

// LocationStatus is the observed state of a Location.
type LocationStatus struct {
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Location is a point of presence in one city. Platform operators create
// Locations; projects may use one only through a LocationBinding.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="City",type=string,JSONPath=`.spec.topology.topology\.datum\.net/city-code`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.locationClassName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Location struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the location.
	Spec LocationSpec `json:"spec"`
	// Status reports whether it accepts workloads.
	Status LocationStatus `json:"status,omitempty"`
}

// LocationList is a list of Locations.
//
// +kubebuilder:object:root=true
type LocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the locations.
	Items []Location `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Location{}, &LocationList{})
}
