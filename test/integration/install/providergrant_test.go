package install_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/controller/nsgrant"
)

// managerUser is the cell's compute-manager as the cell authenticates it.
const managerUser = "system:serviceaccount:compute-system:compute-manager"

// providerBindingsMay is what the admission policy
// compute-debug-relay-bindings says of the provider's own binding.
const providerBindingsMay = "and the RoleBinding compute-kubernetes-provider-pods of ClusterRole compute-kubernetes-provider-pods to itself"

// providerFence checks, before and after the cell's compute-manager runs,
// that the Kubernetes provider's identity (the manager's) creates Pods and
// NetworkPolicies only in federation namespaces, the cell's API server
// deciding (TestTheDebugRelayIsBoundInFederationNamespacesOnly runs the
// manager: one per process). before runs while nothing is bound: it may
// create them nowhere, not in kube-system, and the policy refuses the
// manager every binding of its role but to itself in a federation
// namespace. after waits for the manager to have bound its role in fed:
// then it may there, and still not in kube-system nor in plain.
type providerFence struct {
	mgr        client.Client
	fed, plain string
}

func (f providerFence) probes(ns string) []error {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	policy := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	return []error{f.mgr.Create(ctx, pod, client.DryRunAll), f.mgr.Create(ctx, policy, client.DryRunAll)}
}

func (f providerFence) forbidden(t *testing.T, ns string) {
	t.Helper()
	for i, err := range f.probes(ns) {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the provider's write %d in %s: want Forbidden, got %v", i, ns, err)
		}
	}
}

func (f providerFence) before(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	t.Log("before the manager binds anything, the provider's identity creates no Pod and no NetworkPolicy")
	for _, ns := range []string{"kube-system", f.fed, f.plain} {
		f.forbidden(t, ns)
	}
	t.Log("the policy admits the provider's binding only to itself, in a federation namespace")
	own := func(ns string) *rbacv1.RoleBinding {
		return nsgrant.Grant{Role: nsgrant.ProviderPods, User: managerUser}.Desired(ns)
	}
	to := func(subjects ...rbacv1.Subject) func() error {
		return func() error {
			rb := own(f.fed)
			rb.Subjects = subjects
			return f.mgr.Create(ctx, rb, client.DryRunAll)
		}
	}
	policyEnforced(t, providerBindingsMay, func() error { return f.mgr.Create(ctx, own("kube-system"), client.DryRunAll) })
	expectWrites(t, "compute-manager in the cell", providerBindingsMay,
		[]write{
			{"binding the provider's role in kube-system", func() error { return f.mgr.Create(ctx, own("kube-system"), client.DryRunAll) }},
			{"binding the provider's role in a namespace that is no federation namespace", func() error { return f.mgr.Create(ctx, own(f.plain), client.DryRunAll) }},
			{"binding the provider's role to another user", to(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"})},
			{"binding the provider's role to every ServiceAccount", to(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:serviceaccounts"})},
		},
		[]write{{"binding the provider's role to itself in a federation namespace", func() error { return f.mgr.Create(ctx, own(f.fed), client.DryRunAll) }}})
}

func (f providerFence) after(t *testing.T) {
	t.Helper()
	t.Log("compute-manager with the Kubernetes provider bound its role to itself in every federation namespace")
	eventually(t, time.Minute, "the provider creating a Pod and a NetworkPolicy in "+f.fed, func() error {
		return errors.Join(f.probes(f.fed)...)
	})
	f.forbidden(t, "kube-system")
	f.forbidden(t, f.plain)
}
