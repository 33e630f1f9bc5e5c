// Package hub connects compute-manager to the federation plane (the Karmada
// apiserver, "the hub"): the configuration named by --federation-kubeconfig,
// the scheme of the kinds compute reads and writes there, and the cluster
// (client and cache) that the federation controllers of both roles share.
//
// The management role's WorkloadDeploymentFederator and InstanceProjector
// and the cell role's Instance write-back all talk to the hub through a
// cluster.Cluster from NewCluster, added to their manager as a runnable so
// its cache starts and stops with the manager.
package hub

import (
	"errors"
	"fmt"
	"os"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/cellhealth"
)

// KubeconfigFlag is the flag naming the hub's kubeconfig.
const KubeconfigFlag = "federation-kubeconfig"

// NewScheme returns the scheme of the hub: Kubernetes' built-in kinds,
// compute, Karmada's policies, its Clusters and its ResourceBindings (read
// one by one, never cached).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.Install(s))
	utilruntime.Must(clusterv1alpha1.Install(s))
	utilruntime.Must(workv1alpha2.Install(s))
	return s
}

// LoadConfig reads the hub kubeconfig at path. The error names the flag.
func LoadConfig(path string) (*rest.Config, error) {
	if path == "" {
		return nil, fmt.Errorf("--%s is not set", KubeconfigFlag)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--%s %q cannot be read: %w", KubeconfigFlag, path, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("failed to load --%s %q: %w", KubeconfigFlag, path, err)
	}
	return cfg, nil
}

// NewCluster returns the hub cluster for cfg. Its cache narrows what
// compute reads there: of namespaces only those compute maps project
// namespaces to (they carry the upstream cluster label), of
// PropagationPolicies only compute's own, of Leases only the cells'
// heartbeats. WorkloadDeployments and Instances are cached whole (of one
// city's only, with ForCity), when a controller first reads them. No
// object keeps its managedFields in the cache: no controller reads them
// and every hub write is a patch, a create or a server-side apply, so
// nothing writes a cached object back whole.
func NewCluster(cfg *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
	if cfg == nil {
		return nil, errors.New("the federation plane has no client configuration")
	}
	cl, err := cluster.New(cfg, append([]cluster.Option{defaults}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("failed to create the federation plane client: %w", err)
	}
	return cl, nil
}

// defaults are the hub cluster's scheme and cache (see NewCluster).
func defaults(o *cluster.Options) {
	mapped, err := labels.NewRequirement(computev1alpha.UpstreamClusterNameLabel, selection.Exists, nil)
	utilruntime.Must(err)
	o.Scheme = NewScheme()
	o.Cache = cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Namespace{}:                 {Label: labels.NewSelector().Add(*mapped)},
			&policyv1alpha1.PropagationPolicy{}: {Label: labels.SelectorFromSet(labels.Set{computev1alpha.ManagedByLabel: computev1alpha.ManagedByCompute})},
			&coordinationv1.Lease{}:             {Namespaces: map[string]cache.Config{cellhealth.Namespace: {}}},
			// The management plane reads the events regarding Instances
			// (the cells' Pod events) only.
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", computev1alpha.InstanceKind)},
		},
	}
}

// ForCity narrows a cell's hub cache to its own city: of
// WorkloadDeployments only those routed to city (the
// topology.datum.net/city-code label the federator stamps on every hub
// copy), of Instances only those of city (the compute.datumapis.com/city-code
// label every Instance carries from its cell). A cell's write-back reads
// no other city's objects (it leaves them alone when it sees them), so the
// other cities' copies — most of the hub at scale — need not be held in
// its memory. An empty city narrows nothing.
func ForCity(city string) cluster.Option {
	return func(o *cluster.Options) {
		if city == "" {
			return
		}
		if o.Cache.ByObject == nil {
			o.Cache.ByObject = map[client.Object]cache.ByObject{}
		}
		o.Cache.ByObject[&computev1alpha.WorkloadDeployment{}] = cache.ByObject{
			Label: labels.SelectorFromSet(labels.Set{computev1alpha.CityCodeTopologyLabel: city}),
		}
		o.Cache.ByObject[&computev1alpha.Instance{}] = cache.ByObject{
			Label: labels.SelectorFromSet(labels.Set{computev1alpha.CityCodeLabel: city}),
		}
	}
}

// AddCluster creates the hub cluster for cfg and adds it to mgr, which
// starts its cache with the manager's other caches. opts apply after
// NewCluster's own (ForCity, say).
func AddCluster(mgr ctrl.Manager, cfg *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
	if mgr == nil {
		return nil, errors.New("the federation plane needs a manager to join")
	}
	hubCluster, err := NewCluster(cfg, append([]cluster.Option{func(o *cluster.Options) {
		o.Logger = mgr.GetLogger().WithName("federation-plane")
	}}, opts...)...)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(hubCluster); err != nil {
		return nil, fmt.Errorf("failed to add the federation plane to the manager: %w", err)
	}
	return hubCluster, nil
}
