// Package ownerref builds the controller references compute's objects
// carry to their owners, so every writer names an owner the same way: the
// runtime providers' Pods and NetworkPolicies and the Instance
// controller's NetworkBindings to their Instance, the copied Instances to
// the WorkloadDeployment of their plane.
package ownerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Instance returns the controller reference to inst: the garbage collector
// deletes the owned object with the Instance, and metav1.IsControlledBy
// recognises it.
func Instance(inst *computev1alpha.Instance) metav1.OwnerReference {
	return Controller(computev1alpha.InstanceKind, inst)
}

// Controller returns the controller reference to owner, a compute object
// of kind. It does not block the owner's deletion.
func Controller(kind string, owner metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: computev1alpha.GroupVersion.String(),
		Kind:       kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
		Controller: ptr.To(true),
	}
}
