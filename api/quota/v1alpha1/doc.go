// Package v1alpha1 contains compute's copy of Milo's quota API,
// quota.miloapis.com/v1alpha1: ResourceRegistration (a quota-tracked resource
// type), ResourceGrant (capacity given to a consumer), AllowanceBucket (the
// per consumer × resource type ledger) and ResourceClaim (a request to consume
// capacity, one per compute Instance).
//
// Milo owns this API; compute only needs wire-compatible types for its
// controllers, tests and local platform. Field names and JSON shapes follow
// Milo's so objects written against either decode in both. The package holds
// the quota vocabulary only: the resource type names compute registers
// (instances, vCPUs, memory) belong to compute, not here.
//
// +kubebuilder:object:generate=true
// +groupName=quota.miloapis.com
package v1alpha1
