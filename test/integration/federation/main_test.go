// Package federation tests compute's federation controllers against real
// API servers, without Karmada: the tests play Karmada's part (copying a
// hub WorkloadDeployment into a cell, aggregating status into the hub).
//
// Three planes, each with a kube-controller-manager running the garbage
// collector: "project" (compute and contract CRDs), "hub" (Karmada's and
// compute's CRDs) and "cell" (compute's CRDs). In the test process run the
// management role in single mode against the project plane, with the
// federation plane configured (WorkloadDeploymentFederator,
// PropagationPolicy controller, InstanceProjector; webhooks off), and a
// cell manager running only the Instance write-back, so the tests write
// cell Instances and their status themselves.
package federation

import (
	"context"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/integration/fixtures"
)

// Plane names, and the project cluster name of the project plane.
const (
	projectPlane = "project"
	hubPlane     = "hub"
	cellPlane    = "cell"
	// clusterName is the management role's name for the project plane.
	clusterName = "tenant-a"
	// statusResyncAfter is how long a hub copy's status may lag before the
	// federator asks for it again (20 s in production).
	statusResyncAfter = 3 * time.Second
)

var (
	env *fixtures.Env
	// The tests' own clients of each plane, straight to the apiservers.
	projectClient, hubClient, cellClient client.Client
	// hubWritesFromCell counts the cell manager's write requests to the hub.
	hubWritesFromCell atomic.Int64
	// hubCreatesFromCell counts the cell manager's creates in the hub, and
	// hubCreatesRefused those the hub answered AlreadyExists.
	hubCreatesFromCell, hubCreatesRefused atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: projectPlane, ControllerManager: true, CRDDirs: []string{fixtures.CRDDir(), fixtures.ExternalCRDDir()}},
			{Name: hubPlane, ControllerManager: true, CRDDirs: []string{fixtures.CRDDir()}},
			{Name: cellPlane, ControllerManager: true, CRDDirs: []string{fixtures.CRDDir()}},
		},
		KarmadaHubs: []string{hubPlane},
		Setup:       setup,
	}))
}

// setup builds the tests' clients and starts the managers.
func setup(_ context.Context, e *fixtures.Env) error {
	env = e
	projectClient, hubClient, cellClient = e.Client(projectPlane), e.Client(hubPlane), e.Client(cellPlane)
	if err := startManagement(); err != nil {
		return err
	}
	return startCell()
}

// startManagement starts the management role against the project plane
// with the federation plane configured.
func startManagement() error {
	opts := management.NewOptions()
	opts.Projects.SingleClusterName = clusterName
	opts.Webhook.Disabled = true
	opts.Federation = env.Plane(hubPlane).Config()
	opts.StatusResyncAfter = statusResyncAfter
	opts.Manager = ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	role, err := management.Setup(env.Plane(projectPlane).Config(), opts)
	if err != nil {
		return err
	}
	env.Go("management role", role.Start)
	return nil
}

// startCell starts a manager against the cell plane running the Instance
// write-back only; its writes to the hub are counted.
func startCell() error {
	mgr, err := ctrl.NewManager(env.Plane(cellPlane).Config(), ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	hubCfg := rest.CopyConfig(env.Plane(hubPlane).Config())
	hubCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				hubWritesFromCell.Add(1)
			}
			resp, err := rt.RoundTrip(req)
			if req.Method == http.MethodPost {
				hubCreatesFromCell.Add(1)
				if err == nil && resp.StatusCode == http.StatusConflict {
					hubCreatesRefused.Add(1)
				}
			}
			return resp, err
		})
	})
	// No heartbeat: the hub writes counted here are the write-back's alone
	// (the reachability tests play the cell's heartbeat themselves).
	if err := cell.Setup(mgr, cell.Options{WriteBack: &cell.WriteBackOptions{Config: hubCfg}}); err != nil {
		return err
	}
	env.Go("cell manager", mgr.Start)
	return nil
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
