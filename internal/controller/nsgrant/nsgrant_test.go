package nsgrant

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

const (
	fedNS = "ns-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	relay = "system:serviceaccount:compute-system:compute-federation"
)

// grant is the grant the tests keep: the debug relay's.
var grant = Grant{Role: DebugRelay, User: relay}

// nsBuilder builds a namespace of the cell.
type nsBuilder struct{ corev1.Namespace }

func makeNamespace(name string) *nsBuilder {
	return &nsBuilder{corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// federation gives the namespace the upstream labels a hub namespace
// carries into the cell.
func (b *nsBuilder) federation() *nsBuilder {
	return b.label(computev1alpha.UpstreamClusterNameLabel, "cluster-acme").label(computev1alpha.UpstreamNamespaceLabel, "default")
}

func (b *nsBuilder) label(k, v string) *nsBuilder {
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	b.Labels[k] = v
	return b
}

func (b *nsBuilder) deleting() *nsBuilder {
	now := metav1.Now()
	b.DeletionTimestamp, b.Finalizers = &now, []string{"kubernetes"}
	return b
}

func (b *nsBuilder) build() *corev1.Namespace { return b.DeepCopy() }

func TestIsFederationNamespace(t *testing.T) {
	for name, c := range map[string]struct {
		ns   *corev1.Namespace
		want bool
	}{
		"a hub namespace's copy is one":                     {makeNamespace(fedNS).federation().build(), true},
		"kube-system is none":                               {makeNamespace("kube-system").build(), false},
		"a namespace named ns-… without the labels is none": {makeNamespace(fedNS).build(), false},
		"a namespace with the labels but another name is none": {
			makeNamespace("kube-system").federation().build(), false},
		"a namespace whose cluster label is not cluster-… is none": {
			makeNamespace(fedNS).federation().label(computev1alpha.UpstreamClusterNameLabel, "acme").build(), false},
		"a namespace with an empty upstream namespace is none": {
			makeNamespace(fedNS).federation().label(computev1alpha.UpstreamNamespaceLabel, "").build(), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := IsFederationNamespace(c.ns); got != c.want {
				t.Errorf("IsFederationNamespace(%s %v) = %v, want %v", c.ns.Name, c.ns.Labels, got, c.want)
			}
		})
	}
}

// readerCache is a cache that reads from a client: Reconcile only reads.
type readerCache struct {
	cache.Cache
	r client.Reader
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.r.Get(ctx, key, obj, opts...)
}

func (c readerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.r.List(ctx, list, opts...)
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// theirs is a RoleBinding of the relay's name that compute did not create.
func theirs(namespace string) *rbacv1.RoleBinding {
	rb := Grant{Role: DebugRelay, User: "alice"}.Desired(namespace)
	rb.Labels = nil
	return rb
}

// withUser is compute's binding, of another user.
func withUser(namespace, user string) *rbacv1.RoleBinding {
	return Grant{Role: DebugRelay, User: user}.Desired(namespace)
}

func TestReconcile(t *testing.T) {
	for name, c := range map[string]struct {
		ns       *corev1.Namespace
		existing *rbacv1.RoleBinding
		// want is the binding in the namespace afterwards; nil for none.
		want *rbacv1.RoleBinding
		// writes is how many writes the reconcile makes.
		writes int
		err    bool
	}{
		"a federation namespace without the binding gets it": {
			ns: makeNamespace(fedNS).federation().build(), want: grant.Desired(fedNS), writes: 1,
		},
		"kube-system gets none":                                  {ns: makeNamespace("kube-system").build()},
		"a namespace that only looks like one by name gets none": {ns: makeNamespace(fedNS).build()},
		"a federation namespace being deleted gets none": {
			ns: makeNamespace(fedNS).federation().deleting().build(),
		},
		"a binding in step is not written": {
			ns: makeNamespace(fedNS).federation().build(), existing: grant.Desired(fedNS), want: grant.Desired(fedNS),
		},
		"compute's binding of another user is bound to the relay's again": {
			ns: makeNamespace(fedNS).federation().build(), existing: withUser(fedNS, "mallory"), want: grant.Desired(fedNS), writes: 1,
		},
		"a binding compute did not create is left alone": {
			ns: makeNamespace(fedNS).federation().build(), existing: theirs(fedNS), want: theirs(fedNS),
		},
		"compute's binding of another role cannot be fixed and is left": {
			ns: makeNamespace(fedNS).federation().build(),
			existing: func() *rbacv1.RoleBinding {
				rb := grant.Desired(fedNS)
				rb.RoleRef.Name = "edit"
				return rb
			}(),
			want: func() *rbacv1.RoleBinding {
				rb := grant.Desired(fedNS)
				rb.RoleRef.Name = "edit"
				return rb
			}(),
			err: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{c.ns}
			if c.existing != nil {
				objs = append(objs, c.existing)
			}
			writes := 0
			count := func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				writes++
				return cl.Create(ctx, obj, opts...)
			}
			cl := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).
				WithInterceptorFuncs(interceptor.Funcs{
					Create: count,
					Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						writes++
						return cl.Update(ctx, obj, opts...)
					},
				}).Build()
			r := &Reconciler{Name: "debugrelay", Client: cl, Cache: readerCache{r: cl}, Grant: grant}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: c.ns.Name}})
			if (err != nil) != c.err {
				t.Fatalf("Reconcile: err %v, want an error: %v", err, c.err)
			}
			if err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Errorf("Reconcile: %v is no terminal error: it would be retried for ever", err)
			}
			if res != (ctrl.Result{}) {
				t.Errorf("Reconcile returned %+v; it never waits", res)
			}
			if writes != c.writes {
				t.Errorf("Reconcile wrote %d times, want %d", writes, c.writes)
			}
			got := &rbacv1.RoleBinding{}
			err = cl.Get(context.Background(), client.ObjectKey{Namespace: c.ns.Name, Name: DebugRelay}, got)
			if c.want == nil {
				if err == nil {
					t.Errorf("the namespace holds the RoleBinding %s; want none", DebugRelay)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want.RoleRef, got.RoleRef); diff != "" {
				t.Errorf("roleRef (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want.Subjects, got.Subjects); diff != "" {
				t.Errorf("subjects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want.Labels, got.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAMissingNamespaceIsNoError(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(newScheme(t)).Build()
	r := &Reconciler{Name: "debugrelay", Client: cl, Cache: readerCache{r: cl}, Grant: grant}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: fedNS}}); err != nil {
		t.Errorf("Reconcile of a namespace that is gone: %v", err)
	}
}
