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
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr/funcr"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
	"github.com/citycells/compute/test/integration/fixtures"
)

// Plane names, and the project cluster name of the project plane.
const (
	projectPlane = "project"
	hubPlane     = "hub"
	cellPlane    = "cell"
	// clusterName is the management role's name for the project plane.
	clusterName = "tenant-a"
)

var (
	env *planes.Environment
	// The tests' own clients of each plane, straight to the apiservers.
	projectClient, hubClient, cellClient client.Client
	// hubWritesFromCell counts the cell manager's write requests to the hub.
	hubWritesFromCell atomic.Int64
	// hubCreatesFromCell counts the cell manager's creates in the hub, and
	// hubCreatesRefused those the hub answered AlreadyExists.
	hubCreatesFromCell, hubCreatesRefused atomic.Int64
	// scheme knows every kind the tests use.
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

	karmadaCRDs, err := toolchain.KarmadaCRDDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = planes.Start(context.Background(), planes.Options{
		Planes: []planes.PlaneSpec{
			{Name: projectPlane, ControllerManager: true, CRDDirs: crdDirs()},
			{Name: hubPlane, ControllerManager: true, CRDDirs: []string{karmadaCRDs, fixtures.KarmadaClusterCRDDir(), crdDirs()[0]}},
			{Name: cellPlane, ControllerManager: true, CRDDirs: crdDirs()[:1]},
		},
		Log: logs,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop() // deferred in run, not TestMain: os.Exit skips defers

	for name, c := range map[string]*client.Client{projectPlane: &projectClient, hubPlane: &hubClient, cellPlane: &cellClient} {
		if *c, err = client.New(env.Plane(name).Config(), client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgmtDone, err := startManagement(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cellDone, err := startCell(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	for _, d := range []<-chan error{mgmtDone, cellDone} {
		if err := <-d; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
			return 1
		}
	}
	return code
}

// startManagement starts the management role against the project plane
// with the federation plane configured.
func startManagement(ctx context.Context) (<-chan error, error) {
	opts := management.NewOptions()
	opts.Projects.SingleClusterName = clusterName
	opts.Webhook.Disabled = true
	opts.Federation = env.Plane(hubPlane).Config()
	opts.Manager = ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	role, err := management.Setup(env.Plane(projectPlane).Config(), opts)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- role.Start(ctx) }()
	return done, nil
}

// startCell starts a manager against the cell plane running the Instance
// write-back only; its writes to the hub are counted.
func startCell(ctx context.Context) (<-chan error, error) {
	mgr, err := ctrl.NewManager(env.Plane(cellPlane).Config(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
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
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// newScheme knows core, compute, networking, Karmada policies and Clusters.
func newScheme() *apiruntime.Scheme {
	s := management.NewScheme()
	if err := policyv1alpha1.Install(s); err != nil {
		panic(err)
	}
	if err := clusterv1alpha1.Install(s); err != nil {
		panic(err)
	}
	return s
}

// crdDirs are the compute and external CRDs.
func crdDirs() []string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	return []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "config", "crd", "external")}
}
