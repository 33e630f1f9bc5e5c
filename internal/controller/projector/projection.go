package projector

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// Reasons a hub Instance cannot be projected; the values label the
// compute_projection_unresolvable_total metric and the event.
const (
	// ReasonNamespaceNotMapped: the hub namespace does not carry the
	// upstream cluster and namespace labels.
	ReasonNamespaceNotMapped = "NamespaceNotMapped"
	// ReasonDeploymentUnlabelled: the Instance has no
	// workload-deployment-name label.
	ReasonDeploymentUnlabelled = "DeploymentUnlabelled"
	// ReasonClusterNotEngaged: the project cluster is not (yet) engaged.
	ReasonClusterNotEngaged = "ClusterNotEngaged"
	// ReasonDeploymentMismatch: the project WorkloadDeployment of that name
	// is federated to another hub namespace.
	ReasonDeploymentMismatch = "DeploymentMismatch"
	// ReasonNameTaken: an Instance that is not a projection has the name
	// in the project namespace.
	ReasonNameTaken = "NameTaken"
)

// identity is where a hub Instance is projected.
type identity struct {
	// cluster is the project cluster name.
	cluster string
	// namespace is the project namespace.
	namespace string
	// deployment is the name of the owning WorkloadDeployment.
	deployment string
}

// resolve tells where hub Instance inst, in hub namespace ns (nil when the
// namespace is not one compute maps), is projected. On failure it returns
// the reason (a Reason* constant) and a message.
func resolve(inst *computev1alpha.Instance, ns *corev1.Namespace) (id identity, reason, message string) {
	if ns == nil {
		return identity{}, ReasonNamespaceNotMapped,
			"namespace " + inst.Namespace + " of the federation plane does not carry the " +
				computev1alpha.UpstreamClusterNameLabel + " and " + computev1alpha.UpstreamNamespaceLabel + " labels"
	}
	cluster, ok := names.ClusterFromUpstreamName(ns.Labels[computev1alpha.UpstreamClusterNameLabel])
	namespace := ns.Labels[computev1alpha.UpstreamNamespaceLabel]
	if !ok || namespace == "" {
		return identity{}, ReasonNamespaceNotMapped,
			"namespace " + inst.Namespace + " of the federation plane does not name a project cluster and namespace (labels " +
				computev1alpha.UpstreamClusterNameLabel + ", " + computev1alpha.UpstreamNamespaceLabel + ")"
	}
	deployment := inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
	if deployment == "" {
		return identity{}, ReasonDeploymentUnlabelled,
			"the Instance has no " + computev1alpha.WorkloadDeploymentNameLabel + " label, so its WorkloadDeployment is unknown"
	}
	return identity{cluster: cluster, namespace: namespace, deployment: deployment}, "", ""
}

// Projection returns the projection of hub Instance inst in project
// namespace namespace, owned by project WorkloadDeployment owner.
func Projection(inst *computev1alpha.Instance, namespace string, owner *computev1alpha.WorkloadDeployment) *computev1alpha.Instance {
	labels := maps.Clone(inst.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[computev1alpha.ProjectionLabel] = "true"
	out := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            inst.Name,
			Namespace:       namespace,
			Labels:          labels,
			Annotations:     maps.Clone(inst.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerReference(owner)},
		},
		Spec:   *inst.Spec.DeepCopy(),
		Status: *inst.Status.DeepCopy(),
	}
	out.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceKind))
	return out
}

// ownerReference is the reference a projection carries to its
// WorkloadDeployment. It does not block the owner's deletion: the
// projector holds no permission on WorkloadDeployment finalizers for that.
func ownerReference(wd *computev1alpha.WorkloadDeployment) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: computev1alpha.GroupVersion.String(),
		Kind:       computev1alpha.WorkloadDeploymentKind,
		Name:       wd.Name,
		UID:        wd.UID,
		Controller: ptr.To(true),
	}
}

// MergeProjection returns existing updated to carry desired's labels and
// annotations (set over existing ones), owner and spec; status is left
// as it is (it is written through its subresource). changed reports whether
// the result differs from existing, which is not modified.
func MergeProjection(existing, desired *computev1alpha.Instance) (merged *computev1alpha.Instance, changed bool) {
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

// isProjection reports whether a project Instance is a projection.
func isProjection(inst *computev1alpha.Instance) bool {
	_, ok := inst.Labels[computev1alpha.ProjectionLabel]
	return ok
}

// ownerWaitAfter is how long to wait before looking for the project
// WorkloadDeployment of a hub Instance again: briefly while the Instance
// is young (its deployment is normally there already, or moments away),
// then rarely.
func ownerWaitAfter(age time.Duration) time.Duration {
	if age < time.Minute {
		return 2 * time.Second
	}
	return 30 * time.Second
}
