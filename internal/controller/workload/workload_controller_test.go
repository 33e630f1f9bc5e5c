package workload

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestReconcileDropsRequestsWithoutClusterName(t *testing.T) {
	// No manager: a request without a cluster must not get as far as
	// resolving one (the empty name is the host cluster).
	r := &Reconciler{}
	req := mcreconcile.Request{Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}}}
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("Reconcile() = %v, %v; want an empty result and no error", res, err)
	}
}

func TestWorkloadsBoundToALocation(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{computev1alpha.AddToScheme, networkingv1alpha.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	binding := func(ns, location string) *networkingv1alpha.LocationBinding {
		return &networkingv1alpha.LocationBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "b-" + location, Namespace: ns},
			Spec: networkingv1alpha.LocationBindingSpec{LocationRef: networkingv1alpha.LocationReference{
				Namespace: "locations", Name: location,
			}},
		}
	}
	workload := func(ns, name string) *computev1alpha.Workload {
		return &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		binding("shop", "dfw-1"), binding("blog", "dfw-1"), binding("blog", "lhr-1"), binding("wiki", "lhr-1"),
		workload("shop", "web"), workload("shop", "api"), workload("blog", "site"), workload("wiki", "docs"),
	).Build()

	loc := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Namespace: "locations", Name: "dfw-1"}}
	got := map[string]bool{}
	for _, req := range workloadsBoundTo(context.Background(), c, "project-a", loc) {
		if req.ClusterName != "project-a" {
			t.Errorf("request %v lost its cluster name", req)
		}
		got[req.String()] = true
	}
	want := map[string]bool{
		"cluster://project-a/shop/web": true, "cluster://project-a/shop/api": true, "cluster://project-a/blog/site": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("workloadsBoundTo() mismatch (-want +got):\n%s", diff)
	}
}

func TestAWorkloadDeletedWhileItsStatusIsWrittenIsNotRequeued(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{computev1alpha.AddToScheme, networkingv1alpha.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	w := rolloutWorkload()
	statusPatches := 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(w).
		WithStatusSubresource(&computev1alpha.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				statusPatches++
				// The Workload is deleted between the read and the write.
				if err := c.Delete(ctx, obj); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))}
	res, err := r.reconcile(context.Background(), c, events.NewFakeRecorder(10), workloadKey{NamespacedName: client.ObjectKeyFromObject(w)})
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("reconcile() = %+v, %v; want an empty result and no error, so the deleted Workload is not requeued", res, err)
	}
	if statusPatches != 1 {
		t.Fatalf("%d status patches, want 1 (the one the deletion raced)", statusPatches)
	}
}

// TestTheRevisionIsWrittenWhileTheDeploymentsAre: a new Workload's
// revision does not hold its deployments back by a round trip. The
// revision's create waits until a deployment's create has begun (written
// one after the other, it would wait in vain); a revision that cannot be
// recorded leaves the deployments written and the error returned.
func TestTheRevisionIsWrittenWhileTheDeploymentsAre(t *testing.T) {
	for name, failRevision := range map[string]bool{"recorded": false, "not recorded": true} {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{computev1alpha.AddToScheme, networkingv1alpha.AddToScheme, appsv1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			w := rolloutWorkload()
			loc := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Namespace: "locations", Name: "dfw-1"}}
			loc.Spec.Topology = map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW"}
			loc.Status.Conditions = []metav1.Condition{{Type: networkingv1alpha.LocationConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
			binding := &networkingv1alpha.LocationBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: "dfw"},
				Spec:       networkingv1alpha.LocationBindingSpec{LocationRef: networkingv1alpha.LocationReference{Namespace: "locations", Name: "dfw-1"}},
			}
			deploying := make(chan struct{})
			var once sync.Once
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(w, loc, binding).
				WithStatusSubresource(&computev1alpha.Workload{}).
				WithInterceptorFuncs(interceptor.Funcs{
					Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
						switch obj.(type) {
						case *computev1alpha.WorkloadDeployment:
							once.Do(func() { close(deploying) })
						case *appsv1.ControllerRevision:
							select {
							case <-deploying:
							case <-time.After(10 * time.Second):
								return errors.New("the revision was written before any deployment's create began")
							}
							if failRevision {
								return apierrors.NewServiceUnavailable("the revision cannot be written now")
							}
						}
						return c.Create(ctx, obj, opts...)
					},
				}).Build()
			r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))}
			_, err := r.reconcile(context.Background(), c, events.NewFakeRecorder(100), workloadKey{NamespacedName: client.ObjectKeyFromObject(w)})
			if failRevision != (err != nil) {
				t.Fatalf("reconcile() error = %v, want an error: %v", err, failRevision)
			}
			var wds computev1alpha.WorkloadDeploymentList
			var revs appsv1.ControllerRevisionList
			if err := c.List(context.Background(), &wds); err != nil {
				t.Fatal(err)
			}
			if err := c.List(context.Background(), &revs); err != nil {
				t.Fatal(err)
			}
			wantRevs := 1
			if failRevision {
				wantRevs = 0
			}
			if len(wds.Items) != 1 || len(revs.Items) != wantRevs {
				t.Fatalf("%d deployments and %d revisions written, want 1 and %d", len(wds.Items), len(revs.Items), wantRevs)
			}
		})
	}
}
