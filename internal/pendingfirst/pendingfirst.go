// Package pendingfirst puts, in a controller's priority queue, the objects
// an informer's initial list finds with a spec their status has not
// observed ahead of the rest of the list.
//
// controller-runtime's priority queue sends every event of an initial list
// behind the events that change something (handler.WithLowPriorityWhenUnchanged),
// so a restarted manager serves a user's edit made while it was starting
// before the thousands of settled objects it re-reads — but only if the
// edit reaches it as an update. An edit made before the informer's list (a
// manager that was down, or is starting) comes in the list itself, looking
// like every other object, and waits its turn among them. Its
// metadata.generation ahead of its status.observedGeneration tells it apart:
// Handler adds it at normal priority, raising it above the list.
package pendingfirst

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Pending reports whether obj's status has not observed its spec yet: a
// Workload or WorkloadDeployment whose metadata.generation is ahead of its
// status.observedGeneration. Other kinds are never pending.
func Pending(obj client.Object) bool {
	if obj.GetDeletionTimestamp() != nil {
		return false
	}
	switch o := obj.(type) {
	case *computev1alpha.Workload:
		return o.Generation > o.Status.ObservedGeneration
	case *computev1alpha.WorkloadDeployment:
		return o.Generation > o.Status.ObservedGeneration
	}
	return false
}

// handlerOf enqueues, at normal priority, the request of every object of an
// initial list that is Pending; every other event is left to the
// controller's own handler of the kind (For), which it is added beside.
type handlerOf[request comparable] struct {
	requestOf func(client.Object) request
}

// Handler is the handler for a controller-runtime controller: watch the
// kind the controller is For with it too.
func Handler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handlerOf[reconcile.Request]{requestOf: func(obj client.Object) reconcile.Request {
		return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	}}
}

// ClusterHandler is Handler for a multicluster controller (its Watches),
// its requests naming the cluster of the event.
func ClusterHandler(clusterName string, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handlerOf[mcreconcile.Request]{requestOf: func(obj client.Object) mcreconcile.Request {
		return mcreconcile.Request{ClusterName: clusterName, Request: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}}
	}}
}

func (h handlerOf[request]) Create(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[request]) {
	if !e.IsInInitialList || e.Object == nil || !Pending(e.Object) {
		return
	}
	if pq, ok := q.(priorityqueue.PriorityQueue[request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, h.requestOf(e.Object))
	}
}

func (handlerOf[request]) Update(context.Context, event.TypedUpdateEvent[client.Object], workqueue.TypedRateLimitingInterface[request]) {
}

func (handlerOf[request]) Delete(context.Context, event.TypedDeleteEvent[client.Object], workqueue.TypedRateLimitingInterface[request]) {
}

func (handlerOf[request]) Generic(context.Context, event.TypedGenericEvent[client.Object], workqueue.TypedRateLimitingInterface[request]) {
}
