// Package instanceref builds the reference the objects made for an
// Instance carry to it, so every writer of such objects (the runtime
// providers' Pods and NetworkPolicies, the Instance controller's
// NetworkBindings) names its owner the same way.
package instanceref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Controller returns the controller owner reference to inst: the garbage
// collector deletes the owned object with the Instance, and
// metav1.IsControlledBy recognises it.
func Controller(inst *computev1alpha.Instance) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: computev1alpha.GroupVersion.String(),
		Kind:       computev1alpha.InstanceKind,
		Name:       inst.Name,
		UID:        inst.UID,
		Controller: ptr.To(true),
	}
}
