package workload

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

// enqueueForBinding enqueues every Workload of a LocationBinding's
// namespace in the cluster the binding changed in.
func enqueueForBinding(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		return workloadRequests(ctx, cl.GetCache(), clusterName, obj.GetNamespace())
	})
}

// enqueueForLocation enqueues every Workload of every namespace bound to a
// Location in the cluster the Location changed in.
func enqueueForLocation(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		return workloadsBoundTo(ctx, cl.GetCache(), clusterName, obj)
	})
}

// workloadsBoundTo returns a request for every Workload in a namespace with
// a LocationBinding to loc.
func workloadsBoundTo(ctx context.Context, reader client.Reader, clusterName string, loc client.Object) []mcreconcile.Request {
	var bindings networkingv1alpha.LocationBindingList
	if err := reader.List(ctx, &bindings); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list LocationBindings to map a Location to Workloads",
			"cluster", clusterName, "location", client.ObjectKeyFromObject(loc))
		return nil
	}
	seen := map[string]bool{}
	var out []mcreconcile.Request
	for _, b := range bindings.Items {
		ref := b.Spec.LocationRef
		if ref.Name != loc.GetName() || ref.Namespace != loc.GetNamespace() || seen[b.Namespace] {
			continue
		}
		seen[b.Namespace] = true
		out = append(out, workloadRequests(ctx, reader, clusterName, b.Namespace)...)
	}
	return out
}

// workloadRequests returns a request for every Workload of namespace.
func workloadRequests(ctx context.Context, reader client.Reader, clusterName, namespace string) []mcreconcile.Request {
	var list computev1alpha.WorkloadList
	if err := reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list Workloads to map a location change", "cluster", clusterName, "namespace", namespace)
		return nil
	}
	out := make([]mcreconcile.Request, 0, len(list.Items))
	for _, w := range list.Items {
		out = append(out, mcreconcile.Request{
			Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}},
			ClusterName: clusterName,
		})
	}
	return out
}

// enqueueForInstanceType enqueues every Workload of the cluster whose
// template names the InstanceType that changed (or a retired spelling of
// it), so its InstanceTypeDeprecated or InstanceTypeDisabled condition
// follows the type's phase.
func enqueueForInstanceType(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		var list computev1alpha.WorkloadList
		if err := cl.GetCache().List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list Workloads to map an InstanceType", "cluster", clusterName, "instanceType", obj.GetName())
			return nil
		}
		var out []mcreconcile.Request
		for _, w := range list.Items {
			if catalog.Canonical(w.Spec.Template.Spec.Runtime.Resources.InstanceType) != obj.GetName() {
				continue
			}
			out = append(out, mcreconcile.Request{
				Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}},
				ClusterName: clusterName,
			})
		}
		return out
	})
}
