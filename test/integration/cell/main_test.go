// Package cell tests the cell role of compute-manager (the WorkloadDeployment
// and Instance controllers with the simulated provider) against a real cell
// plane: etcd, kube-apiserver with the compute CRDs, and
// kube-controller-manager running the garbage collector; and, on a plane of
// its own with the networking CRDs, with the NetworkingIntegration gate on
// and the networking stand-in.
package cell

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/integration/fixtures"
)

// providerDelay is the simulated provider's provisioning and teardown time:
// long enough that a controller that did not wait for readiness or
// removal would be caught by the ordering checks, short enough to keep the
// suite quick.
const providerDelay = 300 * time.Millisecond

var (
	// env runs the planes: "cell", with the garbage collector, where the
	// manager runs without a quota backend; "quota-cell", where a second
	// manager runs with the tests' quota backend; and "net-cell", where a
	// third runs with the NetworkingIntegration gate on. Its clients are
	// not rate limited on the client, as compute-manager's are not.
	env *fixtures.Env
	// k8s is the tests' own client of the cell plane, straight to the
	// apiserver.
	k8s client.WithWatch
	// quotaK8s is the tests' own client of the quota-cell plane.
	quotaK8s client.Client
	// netK8s is the tests' own client of the net-cell plane, where the
	// manager runs with the NetworkingIntegration gate on and the
	// networking stand-in.
	netK8s client.Client
	// writes counts the write requests of the manager of the cell plane.
	writes = newWriteCounter()
	// quotas is the quota backend of the quota-cell plane's manager.
	quotas = newFakeQuota()
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: "cell", ControllerManager: true, CRDDirs: []string{fixtures.CRDDir()}},
			{Name: "quota-cell", CRDDirs: []string{fixtures.CRDDir()}},
			{Name: "net-cell", ControllerManager: true, CRDDirs: []string{fixtures.CRDDir(), fixtures.ExternalCRDDir()}},
		},
		Unthrottled: true,
		Setup:       setup,
	}))
}

// setup builds the tests' clients and starts a manager on each plane.
func setup(_ context.Context, e *fixtures.Env) error {
	env = e
	k8s, quotaK8s, netK8s = e.Client("cell"), e.Client("quota-cell"), e.Client("net-cell")
	mcfg := e.Config("cell")
	mcfg.Wrap(writes.wrap)
	// The cell plane serves no resource metrics API: its manager is told
	// the cell does (metricsServed), so its autoscaler creates HPAs; the
	// quota-cell's asks the plane's discovery, which says it does not.
	cellOpts := cell.Options{Location: &cellLocation, Controllers: &cell.ControllerOptions{MetricsAPI: metricsServed{}}}
	if err := startManager("cell", mcfg, cellOpts); err != nil {
		return err
	}
	if err := startManager("quota-cell", e.Config("quota-cell"), cell.Options{Controllers: &cell.ControllerOptions{Quota: quotas}}); err != nil {
		return err
	}
	return startManager("net-cell", e.Config("net-cell"), cell.Options{NetworkingIntegration: true, Location: &cellLocation})
}

// cellLocation is the Location the cell of the suite serves.
var cellLocation = computev1alpha.LocationReference{Namespace: "datum-locations", Name: "dfw"}

// startManager runs the cell controllers and the simulated provider
// against a plane, as compute-manager --enable-cell-controllers
// --runtime-provider=simulated does, until the tests are done; opts
// without Controllers run them with their defaults.
func startManager(plane string, cfg *rest.Config, opts cell.Options) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}
	if opts.Controllers == nil {
		opts.Controllers = &cell.ControllerOptions{}
	}
	opts.Provider = cell.SimulatedProvider{Delay: providerDelay, CIDR: "10.40.0.0/16", ExternalCIDR: "203.0.113.0/24"}
	if opts.NetworkingIntegration {
		// The networks assign the addresses, from the stand-in's pool: a
		// /29 per network (5 addresses), so a test can run one out.
		opts.Provider = cell.SimulatedProvider{Delay: providerDelay}
		opts.Networking = &cell.NetOptions{CIDR: netPool, SubnetPrefixLength: netSubnetBits}
	}
	if err := cell.Setup(mgr, opts); err != nil {
		return err
	}
	env.Go("manager of "+plane, mgr.Start)
	return nil
}

// The networking stand-in's pool on the net-cell plane and the size of
// each network's subnet there.
const (
	netPool       = "10.60.0.0/16"
	netSubnetBits = 29
)
