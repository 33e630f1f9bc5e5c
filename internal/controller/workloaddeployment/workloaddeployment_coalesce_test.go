package workloaddeployment

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestCoalescingWindowGrowsWithTheDeployment(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	cases := map[string]struct {
		instances int
		observed  bool
		want      time.Duration
	}{
		"a deployment never reconciled is brought back at once": {want: 0},
		"a deployment of two Instances waits microseconds":      {observed: true, instances: 2, want: 40 * time.Microsecond},
		"a deployment of a hundred Instances waits 2ms":         {observed: true, instances: 100, want: 2 * time.Millisecond},
		"a deployment of a thousand Instances waits the most":   {observed: true, instances: 1000, want: maxCoalesce},
		"a deployment of ten thousand Instances waits no more":  {observed: true, instances: 10000, want: maxCoalesce},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &sizes{}
			if tc.observed {
				s.observed(key, tc.instances)
			}
			if got := s.window(key); got != tc.want {
				t.Errorf("window() = %s, want %s", got, tc.want)
			}
			s.forget(key)
			if got := s.window(key); got != 0 {
				t.Errorf("window() after forget = %s, want 0", got)
			}
		})
	}
}

func TestInstanceEventsEnqueueTheControllingDeployment(t *testing.T) {
	wdRef := func(kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: computev1alpha.GroupVersion.String(), Kind: kind, Name: "web", UID: "u1", Controller: &controller}
	}
	inst := func(refs ...metav1.OwnerReference) *computev1alpha.Instance {
		return &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", OwnerReferences: refs}}
	}
	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}
	cases := map[string]struct {
		inst *computev1alpha.Instance
		want bool
	}{
		"an Instance a deployment controls brings it back": {inst: inst(wdRef(computev1alpha.WorkloadDeploymentKind, true)), want: true},
		"an Instance a deployment only owns does not":      {inst: inst(wdRef(computev1alpha.WorkloadDeploymentKind, false))},
		"an Instance something else controls does not":     {inst: inst(wdRef("Workload", true))},
		"an Instance without owners does not":              {inst: inst()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			instanceEvents{sizes: &sizes{}}.Create(context.Background(), event.CreateEvent{Object: tc.inst}, q)
			if got := q.Len() == 1; got != tc.want {
				t.Fatalf("enqueued = %v, want %v", got, tc.want)
			}
			if tc.want {
				if got, _ := q.Get(); got != want {
					t.Errorf("enqueued %v, want %v", got, want)
				}
			}
		})
	}
}

func TestInstanceEventsOfALargeDeploymentAreCoalesced(t *testing.T) {
	controller := true
	s := &sizes{}
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	s.observed(key, 1000)
	h := instanceEvents{sizes: s}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 50 {
		obj := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + string(rune('a'+i%26)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.WorkloadDeploymentKind, Name: "web", UID: "u1", Controller: &controller}}}}
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
	}
	if q.Len() != 0 {
		t.Fatalf("the deployment was enqueued at once (%d items); want it held for its window", q.Len())
	}
	got, _ := q.Get() // blocks until the window is up
	if got.NamespacedName != key {
		t.Fatalf("enqueued %v, want %v", got, key)
	}
	q.Done(got)
	if q.Len() != 0 {
		t.Errorf("%d more reconciles queued; want the 50 updates to make one", q.Len())
	}
}
