// Package quotaflow runs compute's quota end to end on real API servers: a
// cell plane where compute-manager's cell role runs in-process from its
// command line (--quota-kubeconfig, --cell-name, the simulated provider),
// and a project's quota plane where the quota service (compute-quota)
// grants the claims the cell makes. Instances stay gated until their claim
// is granted, over-quota Instances report QuotaExceeded, deleting one
// releases its claim and admits the next, and the time from grant to gate
// removal is measured.
package quotaflow

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cellmanager "github.com/citycells/compute/internal/manager"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/integration/fixtures"
)

// cellName is the cell's --cell-name: the source-cluster label of its
// claims.
const cellName = "cell-flow"

// providerDelay is the simulated provider's provisioning time.
const providerDelay = 200 * time.Millisecond

var (
	// env runs the planes: "cell" and "project" (the quota plane).
	env *fixtures.Env
	// cellKube and projectKube are the tests' own clients.
	cellKube    client.WithWatch
	projectKube client.WithWatch
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: "cell", ControllerManager: true, CRDDirs: []string{fixtures.CRDDir()}},
			{Name: "project", CRDDirs: []string{fixtures.ExternalCRDDir()}},
		},
		Setup: setup,
	}))
}

// setup builds the tests' clients and starts the quota service and
// compute-manager's cell role.
func setup(ctx context.Context, e *fixtures.Env) error {
	env = e
	cellKube, projectKube = e.Client("cell"), e.Client("project")
	if err := startQuotaService(ctx); err != nil {
		return err
	}
	return startCellManager()
}

// startQuotaService runs the quota service against the project plane, as
// compute-quota does; the tests give each of their projects its own grant.
func startQuotaService(ctx context.Context) error {
	mgr, err := quotaservice.NewManager(ctx, env.Plane("project").Config(), manager.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: ctrl.Log.WithName("compute-quota"),
	}, quotaservice.Options{})
	if err != nil {
		return err
	}
	env.Go("quota service", mgr.Start)
	return nil
}

// startCellManager runs compute-manager's cell role from its command line,
// with quota reached through a kubeconfig whose current context is the
// project plane (so it serves every project).
func startCellManager() error {
	quotaKubeconfig := filepath.Join(env.Dir(), "quota.kubeconfig")
	if err := os.WriteFile(quotaKubeconfig, env.Plane("project").KubeconfigBytes(), 0o600); err != nil {
		return err
	}
	opts := cellmanager.NewOptions()
	fs := pflag.NewFlagSet("compute-manager", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse([]string{
		"--enable-cell-controllers", "--runtime-provider=simulated",
		"--kubeconfig=" + env.Plane("cell").KubeconfigPath(),
		"--quota-kubeconfig=" + quotaKubeconfig, "--cell-name=" + cellName,
		"--simulated-provider-delay=" + providerDelay.String(),
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
	}); err != nil {
		return err
	}
	if err := opts.Complete(fs); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	env.Go("compute-manager", func(ctx context.Context) error { return cellmanager.Run(ctx, opts) })
	return nil
}
