package quota

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/names"
)

// The consumer of compute's quota: a Milo Project. Claims name it as both
// their consumer and the resource that triggered them, which is what the
// compute ResourceRegistrations allow.
const (
	// ProjectAPIGroup is the API group of Milo Projects.
	ProjectAPIGroup = "resourcemanager.miloapis.com"
	// ProjectKind is the kind of Milo Projects.
	ProjectKind = "Project"
)

// InstanceUIDAnnotation on a ResourceClaim records the UID of the Instance
// it was made for, so a claim left behind by an earlier Instance of the same
// name (a rollout recreates Instances under their old names) is recognised
// and replaced rather than adopted with stale sizes.
const InstanceUIDAnnotation = "compute.datumapis.com/instance-uid"

// Target is where an Instance's claim lives: the project whose quota plane
// holds it and the namespace in that plane.
type Target struct {
	// Project is the Milo project name: the consumer of the claim.
	Project string
	// Namespace is the claim's namespace in the project's quota plane (the
	// project namespace the Instance's workload lives in).
	Namespace string
}

// String renders the target for messages, e.g. `project "p" namespace "default"`.
func (t Target) String() string {
	return fmt.Sprintf("project %q namespace %q", t.Project, t.Namespace)
}

// ProjectRef returns the reference to the project used as a claim's
// consumer and resource.
func ProjectRef(project string) quotav1alpha1.ConsumerRef {
	return quotav1alpha1.ConsumerRef{APIGroup: ProjectAPIGroup, Kind: ProjectKind, Name: project}
}

// ClaimName returns the name of an Instance's claim: instance-<instance>.
//
// The name is unique in a project's claim namespace across all cells: an
// Instance is named <WorkloadDeployment>-<ordinal> and a WorkloadDeployment
// <workload>-<city>-<hash of workload UID, placement, city>, so two cells
// can only produce the same claim name for the same project namespace if
// they run the same WorkloadDeployment, which needs two cells labelled with
// the same city (one city is one cell) or a 32-bit hash collision between
// two incarnations of one workload. Neither is silently harmful: claims
// carry the source-cluster and instance-namespace labels, and a claim made
// by another cell is never adopted or deleted (see Client.Evaluate).
func ClaimName(inst *computev1alpha.Instance) string {
	return names.ResourceClaimName(inst.Name)
}

// BuildClaim returns the ResourceClaim an Instance needs in target: one
// instance plus its vCPU (millicores) and memory (MiB), sized from the
// cell's InstanceType catalog (types), on behalf of the project, labelled
// with the Instance's cell namespace and the cell.
func BuildClaim(inst *computev1alpha.Instance, types catalog.Catalog, target Target, sourceCluster string) (*quotav1alpha1.ResourceClaim, error) {
	size, err := SizeOf(inst, types)
	if err != nil {
		return nil, err
	}
	ref := ProjectRef(target.Project)
	return &quotav1alpha1.ResourceClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: quotav1alpha1.GroupVersion.String(), Kind: quotav1alpha1.ResourceClaimKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ClaimName(inst),
			Namespace: target.Namespace,
			Labels: map[string]string{
				computev1alpha.InstanceNamespaceLabel: inst.Namespace,
				computev1alpha.SourceClusterLabel:     sourceCluster,
			},
			Annotations: map[string]string{InstanceUIDAnnotation: string(inst.UID)},
		},
		Spec: quotav1alpha1.ResourceClaimSpec{
			ConsumerRef: ref,
			Requests: []quotav1alpha1.ResourceRequest{
				{ResourceType: computev1alpha.ResourceTypeInstances, Amount: 1},
				{ResourceType: computev1alpha.ResourceTypeVCPUs, Amount: size.MilliCPU},
				{ResourceType: computev1alpha.ResourceTypeMemory, Amount: size.MemoryMiB},
			},
			ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name},
		},
	}, nil
}

// InstanceForClaim returns the Instance a claim was made for by a cell: its
// namespace from the instance-namespace label and its name from the claim
// name. It reports false for claims of other cells, claims without the
// label, and claims not named like an Instance's.
func InstanceForClaim(claim metav1.Object, sourceCluster string) (types.NamespacedName, bool) {
	labels := claim.GetLabels()
	if labels[computev1alpha.SourceClusterLabel] != sourceCluster {
		return types.NamespacedName{}, false
	}
	ns := labels[computev1alpha.InstanceNamespaceLabel]
	name, ok := strings.CutPrefix(claim.GetName(), names.ResourceClaimName(""))
	if ns == "" || !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// claimOwner says who an existing claim belongs to, relative to an Instance.
type claimOwner int

const (
	// ownedByInstance: this cell, this Instance (or a claim without the UID
	// annotation made for the same name here).
	ownedByInstance claimOwner = iota
	// ownedByPredecessor: this cell and cell namespace, but an earlier
	// Instance of the same name.
	ownedByPredecessor
	// ownedByOtherCell: another cell or another cell namespace made it.
	ownedByOtherCell
)

// ownerOf classifies an existing claim against the Instance asking for it.
func ownerOf(claim *quotav1alpha1.ResourceClaim, inst *computev1alpha.Instance, sourceCluster string) claimOwner {
	if claim.Labels[computev1alpha.SourceClusterLabel] != sourceCluster ||
		claim.Labels[computev1alpha.InstanceNamespaceLabel] != inst.Namespace {
		return ownedByOtherCell
	}
	if uid := claim.Annotations[InstanceUIDAnnotation]; uid != "" && uid != string(inst.UID) {
		return ownedByPredecessor
	}
	return ownedByInstance
}
