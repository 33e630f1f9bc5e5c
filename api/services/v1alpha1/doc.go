// Package v1alpha1 contains compute's copy of Milo's service entitlement
// kind, services.miloapis.com/v1alpha1 ServiceEntitlement: a project's
// request to use a catalog service such as compute.
//
// For a project, compute is in one of three states, read from the project's
// ServiceEntitlement for the service:
//
//   - not requested: no entitlement exists;
//   - activating: the entitlement exists but is not Active yet (phase empty
//     or PendingApproval, or Ready not True); a second create answers
//     "already exists", which means exactly this;
//   - active: phase Active (and Ready True).
//
// Rejected is a fourth, terminal answer from the provider.
//
// Milo owns this API; compute only needs wire-compatible types for its CLI,
// tests and local platform.
//
// +kubebuilder:object:generate=true
// +groupName=services.miloapis.com
package v1alpha1
