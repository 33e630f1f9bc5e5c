package pendingfirst

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func deployment(name string, generation, observed int64) *computev1alpha.WorkloadDeployment {
	return &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation},
		Status:     computev1alpha.WorkloadDeploymentStatus{ObservedGeneration: observed},
	}
}

func TestPending(t *testing.T) {
	gone := deployment("gone", 2, 1)
	gone.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		obj  client.Object
		want bool
	}{
		{deployment("edited", 3, 2), true},
		{deployment("settled", 3, 3), false},
		{deployment("new", 1, 0), true},
		{gone, false},
		{&computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: computev1alpha.WorkloadStatus{ObservedGeneration: 1}}, true},
		{&computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: computev1alpha.WorkloadStatus{ObservedGeneration: 2}}, false},
		{&computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Generation: 2}}, false},
	} {
		if got := Pending(tc.obj); got != tc.want {
			t.Errorf("Pending(%s gen %d) = %t, want %t", tc.obj.GetName(), tc.obj.GetGeneration(), got, tc.want)
		}
	}
}

// TestAnEditInTheInitialListIsServedFirst feeds a controller's queue what
// its For handler and Handler (both wrapped as the builders wrap them) get
// from an initial list of settled deployments with one edited among them,
// then an ordinary create: the edited one comes out first.
func TestAnEditInTheInitialListIsServedFirst(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	handlers := []handler.TypedEventHandler[client.Object, reconcile.Request]{
		handler.WithLowPriorityWhenUnchanged(handler.TypedEventHandler[client.Object, reconcile.Request](&handler.EnqueueRequestForObject{})),
		handler.WithLowPriorityWhenUnchanged(Handler()),
	}
	send := func(obj client.Object, initial bool) {
		for _, h := range handlers {
			h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: obj, IsInInitialList: initial}, q)
		}
	}
	for i := range 50 {
		send(deployment(fmt.Sprintf("settled-%d", i), 2, 2), true)
	}
	send(deployment("edited", 3, 2), true)
	for i := range 50 {
		send(deployment(fmt.Sprintf("later-%d", i), 1, 1), true)
	}
	send(deployment("created-after-the-list", 1, 0), false)

	var order []string
	for q.Len() > 0 {
		item, priority, _ := q.GetWithPriority()
		if len(order) < 2 && priority != 0 {
			t.Errorf("item %d (%s) has priority %d, want 0", len(order), item.Name, priority)
		}
		order = append(order, item.Name)
		q.Done(item)
	}
	if len(order) != 102 {
		t.Fatalf("%d items in the queue, want 102", len(order))
	}
	if order[0] != "edited" && order[1] != "edited" {
		t.Errorf("the edited deployment came out %s, want among the first two (with the create after the list): %v", position(order, "edited"), order[:3])
	}
}

func position(order []string, name string) string {
	for i, n := range order {
		if n == name {
			return fmt.Sprintf("at %d", i)
		}
	}
	return "never"
}
