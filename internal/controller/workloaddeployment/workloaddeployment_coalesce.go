package workloaddeployment

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Coalescing of Instance events. A reconcile reads every Instance of its
// deployment, so its cost grows with the deployment: a thousand Instances
// coming up make thousands of events, and reconciling on each of them would
// read the thousand Instances thousands of times. An Instance event
// therefore brings its deployment back after a window that grows with the
// number of Instances the deployment had when it was last reconciled
// (coalescePerInstance each, at most maxCoalesce): every event inside the
// window joins the same reconcile. A deployment of a few Instances is
// brought back at once (a window of microseconds), so the latency a
// person sees on a small deployment does not change.
const (
	coalescePerInstance = 20 * time.Microsecond
	maxCoalesce         = 20 * time.Millisecond
)

// sizes remembers how many Instances each deployment had at its last
// reconcile.
type sizes struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

// observed records the number of Instances a reconcile of key read.
func (s *sizes) observed(key types.NamespacedName, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[types.NamespacedName]int{}
	}
	s.n[key] = n
}

// forget drops a deployment that is going or gone.
func (s *sizes) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.n, key)
}

// window is how long an Instance event waits for the events after it
// before it brings key back.
func (s *sizes) window(key types.NamespacedName) time.Duration {
	s.mu.Lock()
	n := s.n[key]
	s.mu.Unlock()
	return min(time.Duration(n)*coalescePerInstance, maxCoalesce)
}

// instanceEvents enqueues the WorkloadDeployment that controls an
// Instance, after the deployment's coalescing window.
type instanceEvents struct {
	sizes *sizes
}

var _ handler.EventHandler = instanceEvents{}

// Create enqueues the owner of a new Instance.
func (h instanceEvents) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(q, e.Object)
}

// Update enqueues the owner of a changed Instance (both owners, should the
// controller reference have changed).
func (h instanceEvents) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(q, e.ObjectOld)
	h.enqueue(q, e.ObjectNew)
}

// Delete enqueues the owner of a deleted Instance.
func (h instanceEvents) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(q, e.Object)
}

// Generic enqueues the owner of an Instance.
func (h instanceEvents) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(q, e.Object)
}

// enqueue adds the request of obj's controlling WorkloadDeployment. The
// queue keeps the earliest time an item was asked for, so the first event
// of a burst sets when the reconcile runs and the rest join it.
func (h instanceEvents) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object) {
	owner, ok := controllingDeployment(obj)
	if !ok {
		return
	}
	req := reconcile.Request{NamespacedName: owner}
	if d := h.sizes.window(owner); d > 0 {
		q.AddAfter(req, d)
		return
	}
	q.Add(req)
}

// controllingDeployment returns the WorkloadDeployment that controls obj.
func controllingDeployment(obj client.Object) (types.NamespacedName, bool) {
	if obj == nil {
		return types.NamespacedName{}, false
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != computev1alpha.WorkloadDeploymentKind || ref.APIVersion != computev1alpha.GroupVersion.String() {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, true
}
