package workload

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/placement"
)

// countingClock is a fixed clock that counts its reads.
type countingClock struct {
	at    time.Time
	reads atomic.Int32
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.at
}

func (c *countingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// boundDFW returns a client holding w and a ready Location in DFW bound to
// w's namespace; interceptors may be nil.
func boundDFW(t *testing.T, w *computev1alpha.Workload, funcs interceptor.Funcs) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{computev1alpha.AddToScheme, networkingv1alpha.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	loc := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Namespace: "locations", Name: "dfw-1"}}
	loc.Spec.Topology = map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW"}
	loc.Status.Conditions = []metav1.Condition{{Type: networkingv1alpha.LocationConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	binding := &networkingv1alpha.LocationBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: "dfw"},
		Spec:       networkingv1alpha.LocationBindingSpec{LocationRef: networkingv1alpha.LocationReference{Namespace: "locations", Name: "dfw-1"}},
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(w, loc, binding).
		WithStatusSubresource(&computev1alpha.Workload{}).WithInterceptorFuncs(funcs).Build()
}

// TestAWorkloadStoredWithCityCodesRunsWithoutItsSpecWritten: a Workload
// stored before admission rewrote cityCodes is placed by them as by the
// locationSelector they stand for, in the same pass, and its spec is never
// written.
func TestAWorkloadStoredWithCityCodesRunsWithoutItsSpecWritten(t *testing.T) {
	w := rolloutWorkload()
	w.Spec.Rollout = nil
	w.Spec.Placements[0].LocationSelector = nil
	w.Spec.Placements[0].CityCodes = []string{"DFW"}
	var specWrites atomic.Int32
	c := boundDFW(t, w, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*computev1alpha.Workload); ok {
				specWrites.Add(1)
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*computev1alpha.Workload); ok {
				specWrites.Add(1)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	r := &Reconciler{Clock: &countingClock{at: rolloutNow}}
	if _, err := r.reconcile(context.Background(), c, events.NewFakeRecorder(100), workloadKey{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
		t.Fatalf("reconcile() = %v", err)
	}
	if n := specWrites.Load(); n != 0 {
		t.Errorf("%d writes of the Workload's spec, want none", n)
	}
	var wds computev1alpha.WorkloadDeploymentList
	if err := c.List(context.Background(), &wds); err != nil {
		t.Fatal(err)
	}
	if len(wds.Items) != 1 || wds.Items[0].Spec.CityCode != "DFW" {
		t.Fatalf("deployments %v, want one in DFW in the first pass", wds.Items)
	}
	var got computev1alpha.Workload
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"DFW"}, got.Spec.Placements[0].CityCodes); diff != "" || got.Spec.Placements[0].LocationSelector != nil {
		t.Errorf("the stored spec changed: cityCodes (-want +got):\n%s\nlocationSelector %v", diff, got.Spec.Placements[0].LocationSelector)
	}
	if len(got.Status.Placements) != 1 {
		t.Errorf("status placements %+v, want the placement reported", got.Status.Placements)
	}
}

// TestAReconcileReadsTheClockOnce: every phase stamps with the one time
// the scope read, whether the pass writes or only fails to observe.
func TestAReconcileReadsTheClockOnce(t *testing.T) {
	for name, failList := range map[string]bool{"written": false, "observation failed": true} {
		t.Run(name, func(t *testing.T) {
			w := rolloutWorkload()
			c := boundDFW(t, w, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*appsv1.ControllerRevisionList); ok && failList {
						return errors.New("the revisions cannot be listed now")
					}
					return c.List(ctx, list, opts...)
				},
			})
			clk := &countingClock{at: rolloutNow}
			r := &Reconciler{Clock: clk}
			_, err := r.reconcile(context.Background(), c, events.NewFakeRecorder(100), workloadKey{NamespacedName: client.ObjectKeyFromObject(w)})
			if failList != (err != nil) {
				t.Fatalf("reconcile() error = %v, want an error: %v", err, failList)
			}
			if n := clk.reads.Load(); n != 1 {
				t.Errorf("the clock was read %d times, want once", n)
			}
		})
	}
}

// TestExpandGivesFallbacksTheFailoverBookkeeping: a fallback's deployment
// is built with the failover's annotations, the placements' targets are
// left as they were, and a deployment that carried a returning-since
// value gets it cleared.
func TestExpandGivesFallbacksTheFailoverBookkeeping(t *testing.T) {
	s, targets := rolloutScope(t)
	own := targets[1] // LHR
	fb := placement.Fallback("edge", "DFW", targets[0].Location, s.cities, &own, "web-edge-dfw-failover")
	existing := &computev1alpha.WorkloadDeployment{}
	existing.Annotations = map[string]string{computev1alpha.FailoverReturningSinceAnnotation: "2026-11-24T00:00:00Z"}
	fo := failover.Outcome{Decisions: []failover.Decision{{Target: own, Fallback: &fb, Existing: existing, MovedFrom: "SIN: quota"}}}
	ro := planRollout(s, targets, nil, fo)

	got := expand(s.workload, targets, fo, ro)
	if len(got) != len(targets)+1 {
		t.Fatalf("%d targets expanded, want the %d of the placements and the fallback", len(got), len(targets))
	}
	for i := range targets {
		if targets[i].Desired != nil {
			t.Errorf("expand changed the placements' target %s", targets[i].Key())
		}
	}
	ann := got[len(got)-1].Desired.Annotations
	want := map[string]string{computev1alpha.FailoverReturningSinceAnnotation: "", computev1alpha.FailoverMovedFromAnnotation: "SIN: quota"}
	for k, v := range want {
		if a, ok := ann[k]; !ok || a != v {
			t.Errorf("the fallback's annotation %s = %q (set: %v), want %q", k, a, ok, v)
		}
	}
	if ann[computev1alpha.RevisionHashAnnotation] != ro.revisionOf(&own).Annotations[computev1alpha.RevisionHashAnnotation] {
		t.Errorf("the fallback runs revision %q, not that of the Location it stands in for", ann[computev1alpha.RevisionHashAnnotation])
	}
	for _, tg := range got[:len(targets)] {
		if _, ok := tg.Desired.Annotations[computev1alpha.FailoverMovedFromAnnotation]; ok {
			t.Errorf("the placements' target %s got the failover's bookkeeping", tg.Key())
		}
	}
}
