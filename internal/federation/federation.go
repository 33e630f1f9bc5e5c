// Package federation wires compute's federation controllers into the two
// roles of compute-manager. Both connect to the federation plane (the
// Karmada apiserver, --federation-kubeconfig) through their own hub
// cluster (internal/hub), which they add to their manager:
//
//   - SetupManagement: the WorkloadDeploymentFederator and the
//     PropagationPolicy controller (internal/controller/federation) and the
//     InstanceProjector (internal/controller/projector), on the management
//     role's multicluster manager;
//   - SetupCell: the Instance write-back (internal/writeback), on the cell
//     role's manager.
package federation

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	fedcontroller "github.com/citycells/compute/internal/controller/federation"
	"github.com/citycells/compute/internal/controller/projector"
	"github.com/citycells/compute/internal/hub"
	"github.com/citycells/compute/internal/writeback"
)

// SetupManagement registers the federator, the PropagationPolicy controller
// and the projector on mgr, talking to the federation plane at hubConfig.
func SetupManagement(mgr mcmanager.Manager, hubConfig *rest.Config) error {
	if mgr == nil {
		return errors.New("federation: a manager is required")
	}
	hubCluster, err := addHub(mgr.GetLocalManager(), hubConfig)
	if err != nil {
		return err
	}
	// The federator and the policy controller decide over the same
	// policies: they share the per-city locks.
	locks := &fedcontroller.CityLocks{}
	if err := (&fedcontroller.Reconciler{Locks: locks}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the WorkloadDeployment federator: %w", err)
	}
	if err := (&fedcontroller.PolicyReconciler{Locks: locks}).SetupWithManager(mgr.GetLocalManager(), hubCluster); err != nil {
		return fmt.Errorf("failed to set up the PropagationPolicy controller: %w", err)
	}
	if err := (&projector.Reconciler{}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the Instance projector: %w", err)
	}
	return nil
}

// SetupCell registers the Instance write-back on mgr, the cell's manager,
// writing to the federation plane at hubConfig.
func SetupCell(mgr ctrl.Manager, hubConfig *rest.Config) error {
	if mgr == nil {
		return errors.New("federation: a manager is required")
	}
	hubCluster, err := addHub(mgr, hubConfig)
	if err != nil {
		return err
	}
	if err := (&writeback.Reconciler{}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the Instance write-back: %w", err)
	}
	return nil
}

// addHub creates the hub cluster and adds it to mgr, which starts its cache
// with the manager's other caches.
func addHub(mgr ctrl.Manager, hubConfig *rest.Config) (cluster.Cluster, error) {
	hubCluster, err := hub.NewCluster(hubConfig, func(o *cluster.Options) {
		o.Logger = mgr.GetLogger().WithName("federation-plane")
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(hubCluster); err != nil {
		return nil, fmt.Errorf("failed to add the federation plane to the manager: %w", err)
	}
	return hubCluster, nil
}
