package management

import (
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/citycells/compute/internal/controller/nsgrant"
)

// SetupCompanionGrant registers, on mgr, the controller that binds the
// ClusterRole compute-federation-companions to the management role's own
// hub user in every federation namespace of the hub, and its cache: the
// only rights the role holds on the hub's Secrets and ConfigMaps, where
// the referenced-data controller writes the companions
// (internal/controller/nsgrant, config/rbac/federation). The user is the
// one the hub authenticates this identity as, asked of the hub with a
// SelfSubjectReview when the first namespace is reconciled.
func SetupCompanionGrant(mgr ctrl.Manager, hubCluster cluster.Cluster, hubConfig *rest.Config) error {
	c, err := nsgrant.NewCache(hubConfig, hubCluster.GetScheme(), hubCluster.GetRESTMapper(), nsgrant.Companions)
	if err != nil {
		return err
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("failed to add the cache of the companions' RoleBindings: %w", err)
	}
	whoAmI, err := nsgrant.SelfSubjectReview(hubConfig, "federation plane")
	if err != nil {
		return err
	}
	r := &nsgrant.Reconciler{
		Name: "companiongrant", Client: hubCluster.GetClient(), Cache: c,
		Grant: nsgrant.Grant{Role: nsgrant.Companions}, WhoAmI: whoAmI,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the companions' RoleBindings: %w", err)
	}
	return nil
}
