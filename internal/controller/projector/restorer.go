package projector

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// RestorerName names the controller that restores deleted projections.
const RestorerName = "instance-projection-restorer"

// restorer brings back a projection deleted by hand (an admin's slip, a
// cleanup script) while its Instance still runs: the projector reacts to
// the hub, and a projection's deletion changes nothing there. Its requests
// are project WorkloadDeployments, the owners of deleted projections; it
// projects every hub Instance of the deployment again, which recreates only
// what is missing.
type restorer struct {
	r   *Reconciler
	hub client.Reader
}

// setupRestorer registers the restorer on mgr, watching the deletions of
// projections in every project cluster.
func (r *Reconciler) setupRestorer(mgr mcmanager.Manager, hubCluster cluster.Cluster) error {
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			inst, ok := e.Object.(*computev1alpha.Instance)
			return ok && isProjection(inst)
		},
	}
	return mcbuilder.ControllerManagedBy(mgr).
		Named(RestorerName).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation: mgr.GetControllerOptions().SkipNameValidation,
		}).
		Watches(&computev1alpha.Instance{}, func(clusterName string, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
			return handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []mcreconcile.Request {
				// Gone: the projector's memory of its writes to it must
				// not make it wait for a create it made before.
				r.own.Forget(ownKey(clusterName, obj))
				return ownerRequests(clusterName, obj)
			})
		}, mcbuilder.WithPredicates(deleted)).
		Complete(&restorer{r: r, hub: hubCluster.GetCache()})
}

// ownerRequests maps a projection to its owning project WorkloadDeployment.
func ownerRequests(clusterName string, obj client.Object) []mcreconcile.Request {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "WorkloadDeployment" && ref.Controller != nil && *ref.Controller {
			return []mcreconcile.Request{{
				ClusterName: clusterName,
				Request:     reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}},
			}}
		}
	}
	return nil
}

// Reconcile projects every hub Instance of a project WorkloadDeployment.
func (x *restorer) Reconcile(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
	cl, err := x.r.Manager.GetCluster(ctx, req.ClusterName)
	if errors.Is(err, multicluster.ErrClusterNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	wd := &computev1alpha.WorkloadDeployment{}
	if err := cl.GetClient().Get(ctx, req.NamespacedName, wd); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	hubNS := wd.Annotations[computev1alpha.FederationNamespaceAnnotation]
	if wd.DeletionTimestamp != nil || hubNS == "" {
		return reconcile.Result{}, nil
	}
	list := &computev1alpha.InstanceList{}
	if err := x.hub.List(ctx, list, client.InNamespace(hubNS),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: wd.Name}); err != nil {
		return reconcile.Result{}, err
	}
	var errs []error
	for i := range list.Items {
		// A wait the projector asks for is its own to keep: its watches
		// bring the Instance back.
		if _, err := x.r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}); err != nil {
			errs = append(errs, err)
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}
