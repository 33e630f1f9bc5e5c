package install_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/nsgrant"
	"github.com/citycells/compute/internal/manager"
)

// relayUser is the debug API relay's user in a cell (the management role's
// hub ServiceAccount, which Karmada impersonates there).
const relayUser = "system:serviceaccount:compute-system:compute-federation"

// relayBindingsMay is what the admission policy compute-debug-relay-bindings
// says compute's identities may write.
const relayBindingsMay = "may write only the RoleBinding compute-debug-relay of ClusterRole compute-debug-relay to the user " + relayUser

// installRelayRBAC applies, for real, the debug relay's RBAC and admission
// policy of the cell-kubernetes overlay to the cell (whose other objects
// the cell overlay installed) and the Kubernetes provider's role, which
// the manager below runs.
func installRelayRBAC(t *testing.T) {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, u := range render(t, "cell-kubernetes") {
		name := u.GetName()
		if strings.Contains(name, "debug-relay") || strings.Contains(name, "kubernetes-provider") {
			objs = append(objs, u)
		}
	}
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
	}
	if want := map[string]int{"ClusterRole": 4, "ClusterRoleBinding": 2, "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}; fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("the cell-kubernetes overlay renders %v of the relay's and the provider's RBAC, want %v", kinds, want)
	}
	for _, role := range []string{nsgrant.DebugRelay, nsgrant.ProviderPods} {
		if slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
			return u.GetKind() == "ClusterRoleBinding" && u.GetName() == role
		}) {
			t.Errorf("the cell-kubernetes overlay binds ClusterRole %s cluster-wide", role)
		}
	}
	apply(t, cell, objs, false)
}

// federationNamespace creates, as Karmada copies a hub namespace into a
// cell, a namespace ns-<uid> with the hub's upstream labels.
func federationNamespace(t *testing.T) string {
	t.Helper()
	name := "ns-" + string(uuid.NewUUID())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			computev1alpha.UpstreamClusterNameLabel: "cluster-acme",
			computev1alpha.UpstreamNamespaceLabel:   "relay",
			"pod-security.kubernetes.io/enforce":    "baseline",
		},
	}}
	if err := env.Client(cell).Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// relayBinding is the RoleBinding compute keeps in a federation namespace.
func relayBinding(namespace string) *rbacv1.RoleBinding {
	return nsgrant.Grant{Role: nsgrant.DebugRelay, User: relayUser}.Desired(namespace)
}

// TestTheDebugRelayIsBoundInFederationNamespacesOnly: with the
// cell-kubernetes overlay's RBAC and admission policy, compute-manager
// with the Kubernetes provider, under its overlay identity, binds the debug
// API's relay in every federation namespace of the cell — and keeps it
// bound to the relay's user — so the relay may read Pods' logs and exec
// there, and not in kube-system nor in a namespace that is no federation
// namespace, the cell's API server deciding. The manager's own identity is
// refused by the policy compute-debug-relay-bindings every other binding
// RBAC would let it make: the relay's role in kube-system or in another
// namespace, another role (one whose rights it holds, which RBAC lets it
// bind), another name, another subject; its legitimate binding is
// admitted. The provider's own role is bound the same way: to the manager
// itself, and it creates Pods and NetworkPolicies only there
// (providerFence).
func TestTheDebugRelayIsBoundInFederationNamespacesOnly(t *testing.T) {
	installed(t)
	installRelayRBAC(t)
	ctx := context.Background()
	admin := env.Client(cell)
	managerCfg := serviceAccountConfig(t, cell, "compute-system", "compute-manager")
	mgr := env.ClientFor(managerCfg)
	fedA, fedB, fedC := federationNamespace(t), federationNamespace(t), federationNamespace(t)
	plain := newNamespace(t, cell, "plain-")
	fence := providerFence{mgr: mgr, fed: fedB, plain: plain}
	fence.before(t)

	t.Log("the manager's identity binds the relay's role only as compute does, in a federation namespace")
	policyEnforced(t, relayBindingsMay, func() error { return mgr.Create(ctx, relayBinding("kube-system"), client.DryRunAll) })
	other := func(change func(rb *rbacv1.RoleBinding)) func() error {
		return func() error {
			rb := relayBinding(fedA)
			change(rb)
			return mgr.Create(ctx, rb, client.DryRunAll)
		}
	}
	expectWrites(t, "compute-manager in the cell", relayBindingsMay,
		[]write{
			{"binding the relay's role in kube-system", func() error { return mgr.Create(ctx, relayBinding("kube-system"), client.DryRunAll) }},
			{"binding the relay's role in compute-system", func() error { return mgr.Create(ctx, relayBinding("compute-system"), client.DryRunAll) }},
			{"binding the relay's role in a namespace that is no federation namespace", func() error { return mgr.Create(ctx, relayBinding(plain), client.DryRunAll) }},
			{"binding a role whose rights it holds itself", other(func(rb *rbacv1.RoleBinding) { rb.RoleRef.Name = "compute-kubernetes-provider" })},
			{"binding the relay's role under another name", other(func(rb *rbacv1.RoleBinding) { rb.Name = "relay" })},
			{"binding the relay's role to every authenticated user", other(func(rb *rbacv1.RoleBinding) {
				rb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}
			})},
			{"binding the relay's role to the relay and itself", other(func(rb *rbacv1.RoleBinding) {
				rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "compute-system", Name: "compute-manager"})
			})},
			{"binding the relay's role unlabelled", other(func(rb *rbacv1.RoleBinding) { rb.Labels = nil })},
		}, nil)
	eventually(t, 30*time.Second, "compute-manager binding the relay's role in a federation namespace", func() error {
		return mgr.Create(ctx, relayBinding(fedA))
	})
	if err := mgr.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "relay-everywhere"},
		RoleRef:    relayBinding("").RoleRef, Subjects: relayBinding("").Subjects,
	}, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("compute-manager binding the relay's role cluster-wide: want Forbidden, got %v", err)
	}
	// A binding of the relay's name somebody else made may not be taken
	// over, by relabelling it either.
	theirs := relayBinding(fedC)
	theirs.Labels, theirs.Subjects = nil, []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}
	if err := admin.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	adopt := theirs.DeepCopy()
	adopt.Labels, adopt.Subjects = relayBinding("").Labels, relayBinding("").Subjects
	if why := refusedBy(mgr.Update(ctx, adopt, client.DryRunAll), relayBindingsMay); why != nil {
		t.Errorf("compute-manager adopting somebody else's binding: %v", why)
	}

	t.Log("compute-manager with the Kubernetes provider, under that identity, binds the relay in every federation namespace")
	runRelayManager(t, managerCfg)
	bound := func(ns string) func() error {
		return func() error {
			rb := &rbacv1.RoleBinding{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: nsgrant.DebugRelay}, rb); err != nil {
				return err
			}
			if !slices.Equal(rb.Subjects, relayBinding(ns).Subjects) || rb.RoleRef != relayBinding(ns).RoleRef {
				return fmt.Errorf("the RoleBinding %s/%s binds %s %s to %v", ns, rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name, rb.Subjects)
			}
			return nil
		}
	}
	eventually(t, time.Minute, "the relay bound in "+fedB, bound(fedB))
	if err := bound(fedA)(); err != nil {
		t.Error(err)
	}
	for _, ns := range []string{"kube-system", "compute-system"} {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: nsgrant.DebugRelay}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("the RoleBinding %s/%s: want none, got %v", ns, nsgrant.DebugRelay, err)
		}
	}

	fence.after(t)

	t.Log("the relay reads logs and execs in a federation namespace, and nowhere else")
	relayMay(t, fedB, true)
	relayMay(t, "kube-system", false)
	relayMay(t, plain, false)

	t.Log("a binding changed by somebody is put back; somebody else's is left alone")
	rb := &rbacv1.RoleBinding{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: fedB, Name: nsgrant.DebugRelay}, rb); err != nil {
		t.Fatal(err)
	}
	rb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}}
	if err := admin.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the relay bound again in "+fedB, bound(fedB))
	got := &rbacv1.RoleBinding{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil || !slices.Equal(got.Subjects, theirs.Subjects) {
		t.Errorf("somebody else's binding %s/%s: %v, subjects %v", fedC, nsgrant.DebugRelay, err, got.Subjects)
	}
}

// runRelayManager runs compute-manager's own wiring (manager.Run) with the
// Kubernetes provider and nothing else, authenticated as cfg, until the
// test ends.
func runRelayManager(t *testing.T, cfg *rest.Config) {
	t.Helper()
	o := manager.NewOptions()
	o.RuntimeProvider = manager.RuntimeProviderKubernetes
	o.Kubeconfig = writeKubeconfig(t, "cell-kubernetes", cfg)
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := manager.Run(ctx, o); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("compute-manager stopped: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// relayMay checks, in namespace of the cell, that the relay's user may (or
// may not) get pods/log and create pods/exec, as the cell's API server
// answers both a SubjectAccessReview and the request itself, made as the
// relay as Karmada's proxy makes it (a Pod that does not exist: NotFound
// when authorized, Forbidden when not); and that it may never get a Pod.
func relayMay(t *testing.T, namespace string, may bool) {
	t.Helper()
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config(cell))
	if err != nil {
		t.Fatal(err)
	}
	review := func(verb, sub string) bool {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: relayUser, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "pods", Subresource: sub},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, c := range []struct{ verb, sub string }{{"get", "log"}, {"create", "exec"}, {"get", "exec"}} {
		if got := review(c.verb, c.sub); got != may {
			t.Errorf("the relay may %s pods/%s in %s: %v, want %v", c.verb, c.sub, namespace, got, may)
		}
	}
	if review("get", "") {
		t.Errorf("the relay may get Pods in %s", namespace)
	}
	cfg := rest.CopyConfig(env.Config(cell))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: relayUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:compute-system"}}
	relay, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = relay.CoreV1().Pods(namespace).GetLogs("no-such-pod", &corev1.PodLogOptions{}).DoRaw(ctx)
	switch {
	case may && !apierrors.IsNotFound(err):
		t.Errorf("the relay reading a log in %s: want NotFound (authorized, no such Pod), got %v", namespace, err)
	case !may && !apierrors.IsForbidden(err):
		t.Errorf("the relay reading a log in %s: want Forbidden, got %v", namespace, err)
	}
}
