package cell

import (
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
	if !mgr.GetScheme().Recognizes(rbacv1.SchemeGroupVersion.WithKind("RoleBinding")) {
		return errors.New("the manager's scheme does not know rbac.authorization.k8s.io/v1: add clientgoscheme.AddToScheme to it")
	}
	c, err := nsgrant.NewCache(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper(), nsgrant.DebugRelay)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("failed to add the cache of the debug relay's RoleBindings: %w", err)
	}
	r := &nsgrant.Reconciler{Name: "debugrelay", Client: mgr.GetClient(), Cache: c,
		Grant: nsgrant.Grant{Role: nsgrant.DebugRelay, User: opts.User}}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the debug relay's RoleBindings: %w", err)
	}
	return nil
}
