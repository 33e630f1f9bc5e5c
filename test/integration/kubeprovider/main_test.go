// Package kubeprovider tests the Kubernetes runtime provider
// (internal/provider/kubernetes) with the cell controllers, as
// compute-manager --enable-cell-controllers --runtime-provider=kubernetes
// runs them, against a real cell plane: etcd and kube-apiserver with the
// compute CRDs. The plane has no scheduler, no nodes and no kubelet: the
// tests play them, binding Pods to nodes, writing Pod status through the
// status subresource and confirming deletions, and check what the
// Instances report.
//
// It is a package of its own because the cell suite runs the simulated
// provider on its planes: two providers would run the same Instances.
package kubeprovider

import (
	"context"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/citycells/compute/internal/controller/podevents"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/test/integration/fixtures"
)

// recheck is how soon the provider looks again for a missing ConfigMap or
// Secret: short, so the recovery test is quick.
const recheck = 300 * time.Millisecond

var (
	// env runs the "cell" plane. Its clients are not rate limited on the
	// client, as compute-manager's are not.
	env *fixtures.Env
	// k8s is the tests' own client of the cell plane, straight to the
	// apiserver; hubClient the hub plane's; enforcing the "enforcing"
	// cell's, whose provider is told the cell enforces NetworkPolicy (the
	// "cell" plane's is not, as the local platform's today).
	k8s, hubClient, enforcing client.Client
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		// No controller manager: nothing but the provider deletes Pods
		// (no garbage collector), so the tests see the provider's own
		// replacements. The API server runs without ServiceAccount
		// admission (see internal/planes), so Pods need no "default"
		// ServiceAccount.
		// The "hub" plane receives the Pod events the forwarder carries.
		Planes: []planes.PlaneSpec{{Name: "cell", CRDDirs: []string{fixtures.CRDDir()}}, {Name: "hub", CRDDirs: []string{fixtures.CRDDir()}},
			{Name: "enforcing", CRDDirs: []string{fixtures.CRDDir()}}},
		KarmadaHubs: []string{"hub"},
		Unthrottled: true,
		Setup: func(_ context.Context, e *fixtures.Env) error {
			env = e
			k8s, hubClient, enforcing = e.Client("cell"), e.Client("hub"), e.Client("enforcing")
			if err := startManager(e.Config("cell"), kubernetes.EnforcementNone); err != nil {
				return err
			}
			if err := startManager(e.Config("enforcing"), kubernetes.EnforcementEnforced); err != nil {
				return err
			}
			return startForwarder(e.Config("cell"), e.Config("hub"))
		},
	}))
}

// startManager runs the cell controllers and the Kubernetes provider, with
// the Pod cache restricted as compute-manager restricts it, until the tests
// are done; mode says whether the cell enforces NetworkPolicy.
func startManager(cfg *rest.Config, mode kubernetes.NetworkPolicyEnforcement) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: kubernetes.CacheByObject()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}
	if err := cell.Setup(mgr, cell.Options{
		Controllers: &cell.ControllerOptions{},
		Provider:    cell.KubernetesProvider{RecheckAfter: recheck, NetworkPolicyEnforcement: mode},
	}); err != nil {
		return err
	}
	env.Go("manager-"+string(mode), mgr.Start)
	return nil
}

// startForwarder runs the Pod event forwarder of city DFW, as the cell
// role runs it beside the write-back, from the cell plane to the hub
// plane: a manager of its own, with the cache compute-manager gives it
// (the provider's Pods, the events regarding Pods).
func startForwarder(cellCfg, hubCfg *rest.Config) error {
	byObject := kubernetes.CacheByObject()
	maps.Copy(byObject, podevents.CacheByObject())
	mgr, err := ctrl.NewManager(cellCfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: byObject},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("failed to create the forwarder's manager: %w", err)
	}
	hubCluster, err := hub.AddCluster(mgr, hubCfg, hub.ForCity("DFW"))
	if err != nil {
		return err
	}
	if err := (&podevents.Reconciler{City: "DFW"}).SetupWithManager(context.Background(), mgr, hubCluster); err != nil {
		return err
	}
	env.Go("forwarder", mgr.Start)
	return nil
}
