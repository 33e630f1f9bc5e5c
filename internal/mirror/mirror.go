// Package mirror copies compute objects from one plane to another: the cell's
// Instance write-back to the federation plane, the projection of hub
// Instances into the project, and the merges that keep such copies up to date
// without wiping what other writers set. Pure functions only.
package mirror

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/ownerref"
)

// MergeMaps returns base with every entry of over set; base is not modified.
func MergeMaps(base, over map[string]string) map[string]string {
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

// MergeDeploymentMetadata returns a copy of existing with desired's labels
// and annotations set over its own, so those other writers added are kept,
// except the suspension request (computev1alpha.SuspendedAnnotation),
// which goes when desired has none: lifting a suspension resumes the
// copies. existing is not modified.
func MergeDeploymentMetadata(existing, desired *computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	out := existing.DeepCopy()
	out.Labels = MergeMaps(out.Labels, desired.Labels)
	out.Annotations = MergeMaps(out.Annotations, desired.Annotations)
	if _, suspended := desired.Annotations[computev1alpha.SuspendedAnnotation]; !suspended {
		delete(out.Annotations, computev1alpha.SuspendedAnnotation)
	}
	return out
}

// WorkloadDeploymentOwner is the controller reference a copied Instance
// carries to the WorkloadDeployment of its plane. It does not block the
// owner's deletion: the copiers hold no permission on WorkloadDeployment
// finalizers for that.
func WorkloadDeploymentOwner(wd *computev1alpha.WorkloadDeployment) metav1.OwnerReference {
	return ownerref.Controller(computev1alpha.WorkloadDeploymentKind, wd)
}

// Instance returns a copy of inst in namespace, owned by owner: its labels,
// annotations, spec and status. Finalizers, other owner references and
// server-set metadata stay behind.
func Instance(inst *computev1alpha.Instance, namespace string, owner *computev1alpha.WorkloadDeployment) *computev1alpha.Instance {
	out := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            inst.Name,
			Namespace:       namespace,
			Labels:          maps.Clone(inst.Labels),
			Annotations:     maps.Clone(inst.Annotations),
			OwnerReferences: []metav1.OwnerReference{WorkloadDeploymentOwner(owner)},
		},
		Spec:   *inst.Spec.DeepCopy(),
		Status: *inst.Status.DeepCopy(),
	}
	out.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceKind))
	return out
}

// MergeInstance returns existing updated to carry desired: labels and
// annotations set over existing ones, desired's WorkloadDeployment owner in
// place of any other, and the spec. The status is left alone (it has its own
// subresource). changed reports whether the result differs from existing,
// which is not modified.
func MergeInstance(existing, desired *computev1alpha.Instance) (merged *computev1alpha.Instance, changed bool) {
	out := existing.DeepCopy()
	out.Labels = MergeMaps(out.Labels, desired.Labels)
	out.Annotations = MergeMaps(out.Annotations, desired.Annotations)
	refs := make([]metav1.OwnerReference, 0, len(out.OwnerReferences)+len(desired.OwnerReferences))
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

// StampSource records on a write-back copy which cell Instance it mirrors:
// its UID and creation time (SourceUIDAnnotation, SourceCreatedAnnotation).
func StampSource(copied, source *computev1alpha.Instance) {
	if copied.Annotations == nil {
		copied.Annotations = map[string]string{}
	}
	copied.Annotations[computev1alpha.SourceUIDAnnotation] = string(source.UID)
	copied.Annotations[computev1alpha.SourceCreatedAnnotation] = source.CreationTimestamp.UTC().Format(time.RFC3339)
}

// Replaced reports whether existing mirrors another cell Instance than
// desired does — the cell recreated it — so existing must be replaced by a
// new object rather than updated. A copy made before sources were recorded
// is updated (and adopts the source).
func Replaced(existing, desired *computev1alpha.Instance) bool {
	had := existing.Annotations[computev1alpha.SourceUIDAnnotation]
	want := desired.Annotations[computev1alpha.SourceUIDAnnotation]
	return had != "" && want != "" && had != want
}
