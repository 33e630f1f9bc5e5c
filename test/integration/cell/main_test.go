// Package cell tests the cell role of compute-manager (the WorkloadDeployment
// and Instance controllers with the simulated provider) against a real cell
// plane: etcd, kube-apiserver with the compute CRDs, and
// kube-controller-manager running the garbage collector; and, on a plane of
// its own with the networking CRDs, with the NetworkingIntegration gate on
// and the networking stand-in.
package cell

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/planes"
)

// providerDelay is the simulated provider's provisioning and teardown time:
// long enough that a controller that did not wait for readiness or
// removal would be caught by the ordering checks, short enough to keep the
// suite quick.
const providerDelay = 300 * time.Millisecond

var (
	// env runs the planes: "cell", with the garbage collector, where the
	// manager runs without a quota backend, and "quota-cell", where a
	// second manager runs with the tests' quota backend.
	env *planes.Environment
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
	// scheme knows core and compute types.
	scheme = newScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

// run starts the planes and the managers, runs the tests and stops them.
func run(m *testing.M) int {
	logs := io.Discard
	if testing.Verbose() {
		logs = os.Stderr
	}
	ctrl.SetLogger(funcr.New(func(prefix, args string) { _, _ = fmt.Fprintln(logs, prefix, args) }, funcr.Options{Verbosity: 1}))

	var err error
	env, err = planes.Start(context.Background(), planes.Options{
		Planes: []planes.PlaneSpec{
			{Name: "cell", ControllerManager: true, CRDDirs: []string{crdDir()}},
			{Name: "quota-cell", CRDDirs: []string{crdDir()}},
			{Name: "net-cell", ControllerManager: true, CRDDirs: []string{crdDir(), externalCRDDir()}},
		},
		Log: logs,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop() // deferred in run, not TestMain: os.Exit skips defers

	cfg, quotaCfg := planeConfig("cell"), planeConfig("quota-cell")
	if k8s, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if quotaK8s, err = client.New(quotaCfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if netK8s, err = client.New(planeConfig("net-cell"), client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mcfg := rest.CopyConfig(cfg)
	mcfg.Wrap(writes.wrap)
	done, err := startManager(ctx, mcfg, cell.Options{Location: &cellLocation})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	quotaDone, err := startManager(ctx, quotaCfg, cell.Options{Controllers: &cell.ControllerOptions{Quota: quotas}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	netDone, err := startManager(ctx, planeConfig("net-cell"), cell.Options{NetworkingIntegration: true, Location: &cellLocation})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	for _, d := range []<-chan error{done, quotaDone, netDone} {
		if err := <-d; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
			code = 1
		}
	}
	return code
}

// cellLocation is the Location the cell of the suite serves.
var cellLocation = computev1alpha.LocationReference{Namespace: "datum-locations", Name: "dfw"}

// planeConfig returns an admin configuration of a plane without
// client-side rate limiting: like ctrl.GetConfig, it relies on the
// apiserver's priority and fairness.
func planeConfig(name string) *rest.Config {
	cfg := env.Plane(name).Config()
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// startManager runs the cell controllers and the simulated provider, as
// compute-manager --enable-cell-controllers --runtime-provider=simulated
// does; opts without Controllers run them with their defaults.
func startManager(ctx context.Context, cfg *rest.Config, opts cell.Options) (<-chan error, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the manager: %w", err)
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
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}

// The networking stand-in's pool on the net-cell plane and the size of
// each network's subnet there.
const (
	netPool       = "10.60.0.0/16"
	netSubnetBits = 29
)

// externalCRDDir is config/crd/external of this repository: the
// networking.datumapis.com CRDs among others.
func externalCRDDir() string {
	return filepath.Join(crdDir(), "..", "external")
}

// crdDir is config/crd/bases of this repository.
func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases")
}

// newScheme returns a scheme with core and compute types.
func newScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	utilruntime.Must(networkingv1alpha.AddToScheme(s))
	return s
}
