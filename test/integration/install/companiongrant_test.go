package install_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/nsgrant"
	hubmanager "github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/manager/management"
)

// federationUser is the management role's user in the hub.
const federationUser = "system:serviceaccount:compute-system:compute-federation"

// companionBindingsMay is what the admission policy
// compute-federation-companions says of the companions role's bindings.
const companionBindingsMay = "ClusterRole compute-federation-companions is bound only by the RoleBinding compute-federation-companions of a federation namespace, labelled app.kubernetes.io/managed-by=compute, to the user writing it"

// hubFederationNamespace creates, as the management role does, a hub
// namespace ns-<uid> with the upstream labels.
func hubFederationNamespace(t *testing.T) string {
	t.Helper()
	name := "ns-" + string(uuid.NewUUID())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		computev1alpha.UpstreamClusterNameLabel: "cluster-acme",
		computev1alpha.UpstreamNamespaceLabel:   "default",
	}}}
	if err := env.Client(hub).Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// companionBinding is the RoleBinding the management role keeps in a
// federation namespace of the hub.
func companionBinding(namespace string) *rbacv1.RoleBinding {
	return nsgrant.Grant{Role: nsgrant.Companions, User: federationUser}.Desired(namespace)
}

// karmadaCredentials creates, as the admin, what Karmada keeps of a cell
// in push mode: its credentials in karmada-cluster.
func karmadaCredentials(t *testing.T) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	admin := env.Client(hub)
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karmada-cluster"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-cluster", Name: "cell-dfw"},
		StringData: map[string]string{"token": "the keys to DFW"}}
	if err := admin.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return s
}

// secretIn is a companion-like Secret of namespace.
func secretIn(namespace string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe-" + string(uuid.NewUUID())[:8]}}
}

// TestTheManagementRoleHoldsNoKeyToACell (#38, hole 1): the management
// role's hub identity, with the hub overlay's RBAC and admission policies,
// cannot read Karmada's credentials of a cell in karmada-cluster, list
// the hub's Secrets or write one in compute-cells or kube-system; it
// cannot bind the companions role (Secrets and ConfigMaps) anywhere but in
// a federation namespace, to itself, nor bind any other role, nor dress up
// another namespace as a federation namespace. Its own binding in a
// federation namespace is admitted and lets it write the companions there
// — and, with the management role's own wiring running as that identity,
// every federation namespace gets that binding, put back when changed.
func TestTheManagementRoleHoldsNoKeyToACell(t *testing.T) {
	installed(t)
	ctx := context.Background()
	keys := karmadaCredentials(t)
	fedCfg := serviceAccountConfig(t, hub, "compute-system", "compute-federation")
	fed := env.ClientFor(fedCfg)
	fedA, fedB := hubFederationNamespace(t), hubFederationNamespace(t)

	t.Log("RBAC: no Secret of the hub outside the federation namespaces where it is bound")
	for what, err := range map[string]error{
		"reading Karmada's credentials of cell-dfw":            fed.Get(ctx, client.ObjectKeyFromObject(keys), &corev1.Secret{}),
		"listing every Secret of the hub":                      fed.List(ctx, &corev1.SecretList{}),
		"creating a Secret in compute-cells":                   fed.Create(ctx, secretIn("compute-cells"), client.DryRunAll),
		"creating a Secret in kube-system":                     fed.Create(ctx, secretIn("kube-system"), client.DryRunAll),
		"creating a Secret in an unbound federation namespace": fed.Create(ctx, secretIn(fedB), client.DryRunAll),
		"binding the companions role cluster-wide": fed.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "companions-everywhere"},
			RoleRef:    companionBinding("").RoleRef, Subjects: companionBinding("").Subjects,
		}, client.DryRunAll),
		"binding cluster-admin to itself": fed.Create(ctx, func() *rbacv1.RoleBinding {
			rb := companionBinding(fedA)
			rb.Name, rb.RoleRef.Name = "admin", "cluster-admin"
			return rb
		}(), client.DryRunAll),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("compute-federation %s: want Forbidden, got %v", what, err)
		}
	}

	t.Log("the policy: the companions role only in a federation namespace, to itself; no other binding")
	policyEnforced(t, "is no federation namespace", func() error {
		return fed.Create(ctx, companionBinding("karmada-cluster"), client.DryRunAll)
	})
	other := func(change func(rb *rbacv1.RoleBinding)) func() error {
		return func() error {
			rb := companionBinding(fedA)
			change(rb)
			return fed.Create(ctx, rb, client.DryRunAll)
		}
	}
	toCell := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: cellsNamespace, Name: cellDFW}}
	expectWrites(t, "compute-federation in the hub", companionBindingsMay,
		[]write{
			{"binding the companions role in karmada-cluster", func() error {
				return fed.Create(ctx, companionBinding("karmada-cluster"), client.DryRunAll)
			}},
			{"binding the companions role in compute-cells", func() error {
				return fed.Create(ctx, companionBinding(cellsNamespace), client.DryRunAll)
			}},
			{"binding the companions role to a cell", other(func(rb *rbacv1.RoleBinding) { rb.Subjects = toCell })},
			{"binding its own role (whose rights it holds) to a cell", other(func(rb *rbacv1.RoleBinding) {
				rb.RoleRef.Name, rb.Subjects = "compute-federation", toCell
			})},
			{"binding the companions role to itself and a cell", other(func(rb *rbacv1.RoleBinding) { rb.Subjects = append(rb.Subjects, toCell...) })},
			{"binding the companions role under another name", other(func(rb *rbacv1.RoleBinding) { rb.Name = "companions" })},
			{"binding the companions role unlabelled", other(func(rb *rbacv1.RoleBinding) { rb.Labels = nil })},
		}, []write{
			{"binding the companions role to itself in a federation namespace", func() error {
				return fed.Create(ctx, companionBinding(fedA), client.DryRunAll)
			}},
		})
	for _, name := range []string{"karmada-cluster", "kube-system"} {
		ns := &corev1.Namespace{}
		if err := env.Client(hub).Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatal(err)
		}
		labelled := ns.DeepCopy()
		labelled.Labels = map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-acme", computev1alpha.UpstreamNamespaceLabel: "default"}
		err := fed.Patch(ctx, labelled, client.MergeFrom(ns), client.DryRunAll)
		if why := refusedBy(err, "may create and label only federation namespaces (ns-<uid>)"); why != nil {
			t.Errorf("compute-federation labelling %s as a federation namespace: %v", name, why)
		}
	}

	t.Log("the management role's own wiring, as that identity, binds the companions role in every federation namespace")
	runCompanionGrant(t, fedCfg)
	bound := func(ns string) func() error {
		return func() error {
			rb := &rbacv1.RoleBinding{}
			if err := env.Client(hub).Get(ctx, client.ObjectKey{Namespace: ns, Name: nsgrant.Companions}, rb); err != nil {
				return err
			}
			if want := companionBinding(ns); !slices.Equal(rb.Subjects, want.Subjects) || rb.RoleRef != want.RoleRef {
				return fmt.Errorf("the RoleBinding %s/%s binds %s %s to %v", ns, rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name, rb.Subjects)
			}
			return nil
		}
	}
	for _, ns := range []string{fedA, fedB} {
		eventually(t, time.Minute, "the companions role bound in "+ns, bound(ns))
		eventually(t, 30*time.Second, "compute-federation writing a companion in "+ns, func() error {
			return fed.Create(ctx, secretIn(ns))
		})
	}
	if err := fed.Get(ctx, client.ObjectKeyFromObject(keys), &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("compute-federation reading Karmada's credentials of cell-dfw with its bindings made: want Forbidden, got %v", err)
	}
	if err := env.Client(hub).Get(ctx, client.ObjectKey{Namespace: "karmada-cluster", Name: nsgrant.Companions}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the RoleBinding karmada-cluster/%s: want none, got %v", nsgrant.Companions, err)
	}

	t.Log("a binding changed by somebody is put back")
	rb := &rbacv1.RoleBinding{}
	if err := env.Client(hub).Get(ctx, client.ObjectKey{Namespace: fedB, Name: nsgrant.Companions}, rb); err != nil {
		t.Fatal(err)
	}
	if err := env.Client(hub).Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the companions role bound again in "+fedB, bound(fedB))
}

// runCompanionGrant runs the management role's companions grant
// (management.SetupCompanionGrant) on a manager of the hub authenticated
// as cfg, until the test ends.
func runCompanionGrant(t *testing.T, cfg *rest.Config) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: hubmanager.NewScheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		// The management role's own run in this package registers it too.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	hubCluster, err := hubmanager.AddCluster(mgr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := management.SetupCompanionGrant(mgr, hubCluster, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the companions grant stopped: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}
