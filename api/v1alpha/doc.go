// Package v1alpha contains the compute.datumapis.com/v1alpha API: Workload
// (what a developer writes), WorkloadDeployment (one per placement × city,
// federated to the city's cell) and Instance (one per replica, created in the
// cell, written back to the federation plane and projected into the project).
//
// The label and annotation keys in labels.go and the condition types and
// reasons in conditions.go are part of the contract between planes: use the
// constants, never string literals.
//
// +kubebuilder:object:generate=true
// +groupName=compute.datumapis.com
package v1alpha
