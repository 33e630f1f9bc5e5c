package quota

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// WatchSources returns sources that enqueue the owning Instance whenever a
// claim this cell made changes in a quota plane it can watch: one per
// statically configured plane (none for Milo's per-project planes, which are
// not known up front; the age-anchored requeue covers those). Register them
// with builder.WatchesRawSource. Once a plane's watch has synced, Evaluate
// reads that plane's claims from it instead of asking the plane each time.
// Call it once, before the manager starts.
//
// The watches are best effort and never hold the cell back: each plane's
// cache is added to mgr as a plain runnable and the sources do not make the
// controller wait for it to sync, so an unreachable quota plane at start-up
// delays nothing (RequeueAfter still heals every missed grant). The quota
// identity needs list and watch on resourceclaims for them to deliver.
func (c *Client) WatchSources(mgr manager.Manager) ([]source.Source, error) {
	sp, ok := c.planes.(*StaticPlanes)
	if !ok {
		return nil, nil
	}
	selector := labels.SelectorFromSet(labels.Set{computev1alpha.SourceClusterLabel: c.sourceCluster})
	cfgs := sp.distinctConfigs()
	out := make([]source.Source, 0, len(cfgs))
	caches := make(map[string]claimCache, len(cfgs))
	for _, cfg := range cfgs {
		cl, err := cluster.New(cfg, func(o *cluster.Options) {
			o.Scheme = scheme
			o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil }
			o.Cache.ByObject = map[client.Object]cache.ByObject{&quotav1alpha1.ResourceClaim{}: {Label: selector}}
		})
		if err != nil {
			return nil, fmt.Errorf("failed to build the claim watch of quota plane %s: %w", cfg.Host, err)
		}
		if err := mgr.Add(manager.RunnableFunc(cl.Start)); err != nil {
			return nil, fmt.Errorf("failed to add the claim watch of quota plane %s: %w", cfg.Host, err)
		}
		inf, err := cl.GetCache().GetInformer(context.Background(), &quotav1alpha1.ResourceClaim{}, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("failed to build the claim watch of quota plane %s: %w", cfg.Host, err)
		}
		caches[planeKey(cfg)] = claimCache{reader: cl.GetCache(), synced: inf.HasSynced}
		src := source.Kind(cl.GetCache(), &quotav1alpha1.ResourceClaim{},
			handler.TypedEnqueueRequestsFromMapFunc(c.instanceRequests))
		out = append(out, startOnly{src})
	}
	c.claimCaches = caches
	return out, nil
}

// instanceRequests maps a claim to the request of its Instance.
func (c *Client) instanceRequests(_ context.Context, claim *quotav1alpha1.ResourceClaim) []reconcile.Request {
	nn, ok := InstanceForClaim(claim, c.sourceCluster)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: nn}}
}

// startOnly hides a source's WaitForSync, so the controller starts without
// waiting for the source's cache.
type startOnly struct {
	src source.Source
}

// Start starts the wrapped source.
func (s startOnly) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return s.src.Start(ctx, q)
}
