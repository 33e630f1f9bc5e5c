package federation

import (
	"maps"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/mirror"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/referenceddata"
)

// UpstreamGenerationAnnotation on a hub WorkloadDeployment records the
// generation of the project WorkloadDeployment its spec was copied from. The
// federator translates the hub's observedGeneration back into the project's
// generation with it.
const UpstreamGenerationAnnotation = "compute.datumapis.com/upstream-generation"

// UpstreamUIDAnnotation on a hub WorkloadDeployment records the UID of the
// project WorkloadDeployment it copies. The federator only writes a copy
// into the federation namespace it derived from the live project
// namespace's UID, so a copy carrying a deployment's UID proves which
// federation namespace that deployment (whose UID lives in one namespace
// incarnation only) maps to: later reconciles trust it instead of reading
// the namespace again.
const UpstreamUIDAnnotation = "compute.datumapis.com/upstream-uid"

// policyPrefix prefixes the name of the PropagationPolicy of a city.
const policyPrefix = "city-"

// HubNamespace returns the hub namespace that holds the copies of project
// namespace ns of cluster: named after ns's UID, labelled with where it
// comes from.
func HubNamespace(cluster string, ns *corev1.Namespace) *corev1.Namespace {
	return hubNamespaceFor(cluster, ns.Name, names.FederationNamespace(ns.UID))
}

// The Pod Security level every federation namespace enforces. Karmada's
// namespace sync carries a hub namespace, labels included, into every
// cell, so each cell's own API server refuses in it a Pod stronger than
// Kubernetes' baseline (privileged, host namespaces, capabilities beyond
// the baseline set, seccomp Unconfined …) whoever creates it: the tenants'
// Pods share a kernel. An operator may set a stricter level; a weaker one
// is raised.
const (
	podSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	podSecurityLevel        = "baseline"
)

// weakerThanBaseline reports whether a Pod Security level (a label value;
// empty when unset) lets more through than baseline.
func weakerThanBaseline(level string) bool {
	return level != podSecurityLevel && level != "restricted"
}

// hubNamespaceFor returns hub namespace name, labelled as the one of project
// namespace namespace of cluster and with the Pod Security level its cells
// enforce.
func hubNamespaceFor(cluster, namespace, name string) *corev1.Namespace {
	labels := upstreamLabels(cluster, namespace)
	labels[podSecurityEnforceLabel] = podSecurityLevel
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// upstreamLabels are the labels naming the project cluster and namespace a
// hub object comes from.
func upstreamLabels(cluster, namespace string) map[string]string {
	return map[string]string{
		computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(cluster),
		computev1alpha.UpstreamNamespaceLabel:   namespace,
	}
}

// BelongsTo reports whether a hub object (a namespace or a copy) carries
// the upstream labels of namespace of project cluster.
func BelongsTo(obj client.Object, cluster, namespace string) bool {
	l := obj.GetLabels()
	return l[computev1alpha.UpstreamClusterNameLabel] == names.UpstreamClusterName(cluster) &&
		l[computev1alpha.UpstreamNamespaceLabel] == namespace
}

// HubCopy returns the hub copy of project WorkloadDeployment wd of cluster
// in hub namespace hubNamespace: its labels and spec, the upstream labels,
// the city routing label, the project generation and UID, the
// referenced-data annotations and the suspension request. Owner references,
// finalizers and status stay in the project plane.
func HubCopy(cluster, hubNamespace string, wd *computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	labels := maps.Clone(wd.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, upstreamLabels(cluster, wd.Namespace))
	labels[computev1alpha.CityCodeTopologyLabel] = wd.Spec.CityCode
	out := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      wd.Name,
			Namespace: hubNamespace,
			Labels:    labels,
			Annotations: map[string]string{
				UpstreamGenerationAnnotation: strconv.FormatInt(wd.Generation, 10),
				UpstreamUIDAnnotation:        string(wd.UID),
			},
		},
		Spec: *wd.Spec.DeepCopy(),
	}
	// The cell holds Instances until the referenced data the management
	// plane resolved is there (internal/referenceddata): tokens and hashes
	// only, never content.
	for _, k := range referenceddata.AnnotationKeys {
		if v, ok := wd.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	// The cell stops the Instances of a suspended deployment.
	if v, ok := wd.Annotations[computev1alpha.SuspendedAnnotation]; ok {
		out.Annotations[computev1alpha.SuspendedAnnotation] = v
	}
	// When the template was applied, for the cell's
	// compute_management_to_cell_lag_seconds; it changes with the template.
	if v, ok := wd.Annotations[computev1alpha.RevisionAppliedAtAnnotation]; ok {
		out.Annotations[computev1alpha.RevisionAppliedAtAnnotation] = v
	}
	out.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadDeploymentKind))
	return out
}

// MergeHubCopy returns existing updated to carry desired: the spec is
// replaced and desired's labels and annotations are set over existing ones,
// so those Karmada adds to the template are kept, except the suspension
// request, which goes when desired has none. changed reports whether
// the result differs from existing, which is not modified.
func MergeHubCopy(existing, desired *computev1alpha.WorkloadDeployment) (merged *computev1alpha.WorkloadDeployment, changed bool) {
	// Resumed, the hub copy loses the suspension request and Karmada
	// removes it from the cell copy too (it records the annotations it
	// manages).
	out := mirror.MergeDeploymentMetadata(existing, desired)
	out.Spec = *desired.Spec.DeepCopy()
	return out, !equality.Semantic.DeepEqual(existing, out)
}

// CityPolicyName returns the name of the PropagationPolicy of city in a hub
// namespace.
func CityPolicyName(city string) string {
	return policyPrefix + strings.ToLower(city)
}

// CityPolicy returns the PropagationPolicy that sends the WorkloadDeployments
// of city in hub namespace hubNamespace — selected by the city routing label
// — to every Karmada Cluster labelled with the same city, each getting all
// the replicas (Duplicated), with their dependencies: the companions of
// the referenced data each WorkloadDeployment names (propagateDeps and the
// dependency rule of compute's ResourceInterpreterCustomization).
func CityPolicy(hubNamespace, city string) *policyv1alpha1.PropagationPolicy {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{computev1alpha.CityCodeTopologyLabel: city}}
	p := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      CityPolicyName(city),
			Namespace: hubNamespace,
			Labels: map[string]string{
				computev1alpha.ManagedByLabel:        computev1alpha.ManagedByCompute,
				computev1alpha.CityCodeTopologyLabel: city,
			},
		},
		Spec: policyv1alpha1.PropagationSpec{
			PropagateDeps: true,
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{
				APIVersion:    computev1alpha.GroupVersion.String(),
				Kind:          computev1alpha.WorkloadDeploymentKind,
				LabelSelector: selector,
			}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: selector.DeepCopy()},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated,
				},
			},
		},
	}
	p.SetGroupVersionKind(policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy"))
	return p
}

// policyDrifted reports whether the parts of a PropagationPolicy compute
// decides differ from desired. Karmada's webhook defaults other fields;
// those are left alone.
func policyDrifted(existing, desired *policyv1alpha1.PropagationPolicy) bool {
	e, d := existing.Spec, desired.Spec
	if len(e.ResourceSelectors) != len(d.ResourceSelectors) || e.PropagateDeps != d.PropagateDeps {
		return true
	}
	for i := range d.ResourceSelectors {
		es, ds := e.ResourceSelectors[i], d.ResourceSelectors[i]
		if es.APIVersion != ds.APIVersion || es.Kind != ds.Kind || !equality.Semantic.DeepEqual(es.LabelSelector, ds.LabelSelector) {
			return true
		}
	}
	if e.Placement.ClusterAffinity == nil || !equality.Semantic.DeepEqual(e.Placement.ClusterAffinity.LabelSelector, d.Placement.ClusterAffinity.LabelSelector) {
		return true
	}
	return e.Placement.ReplicaScheduling == nil ||
		e.Placement.ReplicaScheduling.ReplicaSchedulingType != d.Placement.ReplicaScheduling.ReplicaSchedulingType
}

// RequestForHubDeployment maps a hub WorkloadDeployment to the request of
// its project WorkloadDeployment: the cluster comes from the upstream
// cluster label, the namespace from the upstream namespace label, and the
// name is the same in both planes. It reports false for a hub object that
// is not a compute copy or names no cluster: an empty cluster name would
// be served against the host cluster.
func RequestForHubDeployment(obj client.Object) (mcreconcile.Request, bool) {
	l := obj.GetLabels()
	cluster, ok := names.ClusterFromUpstreamName(l[computev1alpha.UpstreamClusterNameLabel])
	namespace := l[computev1alpha.UpstreamNamespaceLabel]
	if !ok || cluster == "" || namespace == "" {
		return mcreconcile.Request{}, false
	}
	return mcreconcile.Request{
		Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: obj.GetName()}},
		ClusterName: cluster,
	}, true
}

// CityRequest is the PolicyReconciler's request for city in hub namespace
// namespace: the namespace and the city code.
func CityRequest(namespace, city string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: city}}
}

// cityRequestFor maps a hub WorkloadDeployment or PropagationPolicy to the
// request of its city; false when it carries no city routing label or, for
// a WorkloadDeployment, is not a compute copy.
func cityRequestFor(obj client.Object) (reconcile.Request, bool) {
	l := obj.GetLabels()
	city := l[computev1alpha.CityCodeTopologyLabel]
	if city == "" {
		return reconcile.Request{}, false
	}
	if _, isWD := obj.(*computev1alpha.WorkloadDeployment); isWD && l[computev1alpha.UpstreamClusterNameLabel] == "" {
		return reconcile.Request{}, false
	}
	return CityRequest(obj.GetNamespace(), city), true
}
