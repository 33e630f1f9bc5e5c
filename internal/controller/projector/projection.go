package projector

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/mirror"
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
	out := mirror.Instance(inst, namespace, owner)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[computev1alpha.ProjectionLabel] = "true"
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
