package patch

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func newWorkload() *computev1alpha.Workload {
	return &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
}

func newClient(t *testing.T, patchErr error, patches *int, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := computev1alpha.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&computev1alpha.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				*patches++
				if patchErr != nil {
					return patchErr
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}).Build()
}

func TestStatus(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "compute.datumapis.com", Resource: "workloads"}, "web")
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "compute.datumapis.com", Resource: "workloads"}, "web", errors.New("changed"))
	tests := map[string]struct {
		patchErr    error
		generation  int64
		wantWrote   bool
		wantPatches int
		wantErr     func(error) bool
	}{
		"an unchanged status sends nothing": {
			generation: 0, wantPatches: 0,
		},
		"a changed status is patched": {
			generation: 3, wantWrote: true, wantPatches: 1,
		},
		"an object deleted while the patch is in flight is done, not an error": {
			patchErr: gone, generation: 3, wantPatches: 1,
		},
		"a conflict is returned so the reconcile is retried": {
			patchErr: conflict, generation: 3, wantPatches: 1, wantErr: apierrors.IsConflict,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			patches := 0
			w := newWorkload()
			c := newClient(t, tc.patchErr, &patches, w)
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
				t.Fatal(err)
			}
			wrote, err := Status(context.Background(), c, w, func(w *computev1alpha.Workload) {
				w.Status.ObservedGeneration = tc.generation
			}, WithOptimisticLock())
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Status returned %v", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("Status returned %v, want a matching error", err)
			}
			if wrote != tc.wantWrote || patches != tc.wantPatches {
				t.Errorf("wrote=%t patches=%d, want %t %d", wrote, patches, tc.wantWrote, tc.wantPatches)
			}
		})
	}
}

func TestStatusWritesWhatWasComputed(t *testing.T) {
	patches := 0
	w := newWorkload()
	c := newClient(t, nil, &patches, w)
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if _, err := Status(ctx, c, w, func(w *computev1alpha.Workload) { w.Status.CurrentRevision = 7 }); err != nil {
		t.Fatal(err)
	}
	got := newWorkload()
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.CurrentRevision != 7 {
		t.Errorf("stored currentRevision %d, want 7", got.Status.CurrentRevision)
	}
}
