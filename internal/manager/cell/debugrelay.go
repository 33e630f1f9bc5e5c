package cell

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/citycells/compute/internal/controller/nsgrant"
)

// DebugRelayOptions configure the debug relay's RoleBindings.
type DebugRelayOptions struct {
	// User is the relay's user in the cell, which Karmada's cluster proxy
	// impersonates (--debug-relay-user); nsgrant.DebugRelayUser when
	// empty.
	User string
}

// SetupDebugRelay registers with mgr the controller that binds the
// ClusterRole compute-debug-relay to the debug API's relay in every
// federation namespace of the cell (internal/controller/nsgrant), and
// its cache. It belongs with the Kubernetes runtime provider: only there
// do Pods run whose logs and exec the relay reaches. mgr's scheme must
// know core/v1 and rbac/v1.
func SetupDebugRelay(mgr ctrl.Manager, opts DebugRelayOptions) error {
	if opts.User == "" {
		opts.User = nsgrant.DebugRelayUser
	}
	return setupGrant(mgr, "debugrelay", "the debug relay's", nsgrant.Grant{Role: nsgrant.DebugRelay, User: opts.User}, nil)
}

// SetupProviderGrant registers with mgr the controller that binds the
// ClusterRole compute-kubernetes-provider-pods to the manager's own user
// (asked of the cell with a SelfSubjectReview) in every federation
// namespace of the cell, and its cache: the Kubernetes runtime provider
// creates Pods and NetworkPolicies, and reads the ConfigMaps and Secrets
// its Pods name, there and nowhere else (config/rbac/kubernetes-provider).
func SetupProviderGrant(mgr ctrl.Manager) error {
	whoAmI, err := nsgrant.SelfSubjectReview(mgr.GetConfig(), "cell")
	if err != nil {
		return err
	}
	return setupGrant(mgr, "providergrant", "the Kubernetes provider's", nsgrant.Grant{Role: nsgrant.ProviderPods}, whoAmI)
}

// setupGrant registers the nsgrant controller named name keeping g, with
// its cache; whose names the grant in errors.
func setupGrant(mgr ctrl.Manager, name, whose string, g nsgrant.Grant, whoAmI func(context.Context) (string, error)) error {
	if !mgr.GetScheme().Recognizes(rbacv1.SchemeGroupVersion.WithKind("RoleBinding")) {
		return errors.New("the manager's scheme does not know rbac.authorization.k8s.io/v1: add clientgoscheme.AddToScheme to it")
	}
	c, err := nsgrant.NewCache(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper(), g.Role)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("failed to add the cache of %s RoleBindings: %w", whose, err)
	}
	r := &nsgrant.Reconciler{Name: name, Client: mgr.GetClient(), Cache: c, Grant: g, WhoAmI: whoAmI}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up %s RoleBindings: %w", whose, err)
	}
	return nil
}
