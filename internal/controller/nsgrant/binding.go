package nsgrant

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

const (
	// DebugRelay names the ClusterRole of the debug API relay's rights in a
	// cell (config/rbac/debug-relay, after the overlays' name prefix) and
	// each RoleBinding that grants it.
	DebugRelay = "compute-debug-relay"
	// DebugRelayUser is the relay's user in the cells: the management
	// role's hub ServiceAccount, which Karmada's cluster proxy
	// impersonates.
	DebugRelayUser = "system:serviceaccount:compute-system:compute-federation"
	// Companions names the ClusterRole of the management role's rights on
	// the companions of referenced data in the hub (Secrets and ConfigMaps:
	// config/rbac/federation-companions) and each RoleBinding that
	// grants it.
	Companions = "compute-federation-companions"
	// ProviderPods names the ClusterRole of the Kubernetes runtime
	// provider's writes (Pods, NetworkPolicies) and reads (the ConfigMaps
	// and Secrets its Pods name) in one federation namespace of a cell
	// (config/rbac/kubernetes-provider-pods) and each RoleBinding that
	// grants it to the cell's compute-manager itself.
	ProviderPods = "compute-kubernetes-provider-pods"
	// federationNamespacePrefix starts the name of every federation
	// namespace (names.FederationNamespace).
	federationNamespacePrefix = "ns-"
	// upstreamClusterPrefix starts the upstream cluster label's value
	// (names.UpstreamClusterName).
	upstreamClusterPrefix = "cluster-"
)

// Grant is one ClusterRole granted to one user in every federation
// namespace, by a RoleBinding of the role's name.
type Grant struct {
	// Role names the ClusterRole and each RoleBinding that grants it.
	Role string
	// User is the user it is granted to.
	User string
}

// IsFederationNamespace reports whether a namespace is a federation
// namespace: a hub namespace ns-<uid>, or a cell's copy of one, which
// carries the upstream labels naming the project cluster (cluster-<name>)
// and the project namespace it stands for. The ValidatingAdmissionPolicies
// compute-debug-relay-bindings (cells) and compute-federation-companions
// (hub) apply the same test to the request's namespace; keep them alike.
func IsFederationNamespace(ns metav1.Object) bool {
	l := ns.GetLabels()
	return strings.HasPrefix(ns.GetName(), federationNamespacePrefix) &&
		strings.HasPrefix(l[computev1alpha.UpstreamClusterNameLabel], upstreamClusterPrefix) &&
		l[computev1alpha.UpstreamNamespaceLabel] != ""
}

// Desired returns the RoleBinding compute keeps in federation namespace
// namespace: ClusterRole g.Role bound to g.User, labelled as compute's.
func (g Grant) Desired(namespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:      g.Role,
			Namespace: namespace,
			Labels:    map[string]string{computev1alpha.ManagedByLabel: computev1alpha.ManagedByCompute},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: g.Role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: g.User}},
	}
}

// isCompute reports whether compute created a RoleBinding.
func isCompute(rb *rbacv1.RoleBinding) bool {
	return rb.Labels[computev1alpha.ManagedByLabel] == computev1alpha.ManagedByCompute
}

// inStep reports whether a binding of compute's binds what want binds.
func inStep(have, want *rbacv1.RoleBinding) bool {
	return have.RoleRef == want.RoleRef && equality.Semantic.DeepEqual(have.Subjects, want.Subjects)
}

// Namespace returns the metadata-only object of a namespace, for watches
// and the cache.
func Namespace() *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return obj
}

// CacheOptions are the options of the controller's cache: the metadata of
// the namespaces carrying both upstream labels, and the RoleBindings named
// role, without managed fields. No other kind may be read from it.
func CacheOptions(scheme *runtime.Scheme, mapper meta.RESTMapper, role string) cache.Options {
	upstream := labels.NewSelector()
	for _, key := range []string{computev1alpha.UpstreamClusterNameLabel, computev1alpha.UpstreamNamespaceLabel} {
		req, err := labels.NewRequirement(key, selection.Exists, nil)
		utilruntime.Must(err)
		upstream = upstream.Add(*req)
	}
	return cache.Options{
		Scheme:                      scheme,
		Mapper:                      mapper,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			Namespace():           {Label: upstream},
			&rbacv1.RoleBinding{}: {Field: fields.OneTermEqualSelector("metadata.name", role)},
		},
	}
}

// NewCache returns the controller's cache of the cluster at cfg, for the
// RoleBindings named role; add it to the manager (mgr.Add) so it runs with
// the manager's caches.
func NewCache(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, role string) (cache.Cache, error) {
	c, err := cache.New(cfg, CacheOptions(scheme, mapper, role))
	if err != nil {
		return nil, fmt.Errorf("failed to create the cache of the RoleBindings %s: %w", role, err)
	}
	return c, nil
}
