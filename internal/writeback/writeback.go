package writeback

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Copy returns the hub copy of cell Instance inst, owned by hub
// WorkloadDeployment owner: same namespace and name, the Instance's labels,
// annotations, spec and status. Finalizers, owner references of the cell
// and server-set metadata stay in the cell.
func Copy(inst *computev1alpha.Instance, owner *computev1alpha.WorkloadDeployment) *computev1alpha.Instance {
	out := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            inst.Name,
			Namespace:       inst.Namespace,
			Labels:          maps.Clone(inst.Labels),
			Annotations:     maps.Clone(inst.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerReference(owner)},
		},
		Spec:   *inst.Spec.DeepCopy(),
		Status: *inst.Status.DeepCopy(),
	}
	out.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceKind))
	return out
}

// ownerReference makes the hub WorkloadDeployment the copy's owner.
func ownerReference(wd *computev1alpha.WorkloadDeployment) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: computev1alpha.GroupVersion.String(),
		Kind:       computev1alpha.WorkloadDeploymentKind,
		Name:       wd.Name,
		UID:        wd.UID,
		Controller: ptr.To(true),
	}
}

// Merge returns existing updated to carry desired: labels and annotations
// set over existing ones, desired's WorkloadDeployment owner in place of any
// other, and the spec. The status is left alone (it has its own
// subresource). changed reports whether the result differs from existing,
// which is not modified.
func Merge(existing, desired *computev1alpha.Instance) (merged *computev1alpha.Instance, changed bool) {
	out := existing.DeepCopy()
	out.Labels = mergeMaps(out.Labels, desired.Labels)
	out.Annotations = mergeMaps(out.Annotations, desired.Annotations)
	refs := make([]metav1.OwnerReference, 0, len(out.OwnerReferences)+1)
	for _, ref := range out.OwnerReferences {
		if ref.Kind != computev1alpha.WorkloadDeploymentKind || ref.APIVersion != computev1alpha.GroupVersion.String() {
			refs = append(refs, ref)
		}
	}
	refs = append(refs, desired.OwnerReferences...)
	out.OwnerReferences = refs
	out.Spec = *desired.Spec.DeepCopy()
	return out, !equality.Semantic.DeepEqual(existing, out)
}

// mergeMaps returns base with every entry of over set; base is not
// modified.
func mergeMaps(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	out := maps.Clone(base)
	if out == nil {
		out = make(map[string]string, len(over))
	}
	maps.Copy(out, over)
	return out
}

// ownedBy reports whether the cell runs the hub Instance's deployment:
// cellWD is the cell's WorkloadDeployment of the name the Instance's
// workload-deployment-name label gives, nil when there is none, and its city
// must be the Instance's.
func ownedBy(hubInst *computev1alpha.Instance, cellWD *computev1alpha.WorkloadDeployment) bool {
	if cellWD == nil {
		return false
	}
	city, ok := hubInst.Labels[computev1alpha.CityCodeLabel]
	return !ok || city == cellWD.Spec.CityCode
}
