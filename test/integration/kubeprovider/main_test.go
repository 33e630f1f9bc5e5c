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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/provider/kubernetes"
)

// recheck is how soon the provider looks again for a missing ConfigMap or
// Secret: short, so the recovery test is quick.
const recheck = 300 * time.Millisecond

var (
	// env runs the "cell" plane.
	env *planes.Environment
	// k8s is the tests' own client of the cell plane, straight to the
	// apiserver.
	k8s client.Client
	// scheme knows core and compute types.
	scheme = newScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

// run starts the plane and the manager, runs the tests and stops them.
func run(m *testing.M) int {
	logs := io.Discard
	if testing.Verbose() {
		logs = os.Stderr
	}
	ctrl.SetLogger(funcr.New(func(prefix, args string) { _, _ = fmt.Fprintln(logs, prefix, args) }, funcr.Options{Verbosity: 1}))

	var err error
	env, err = planes.Start(context.Background(), planes.Options{
		// No controller manager: nothing but the provider deletes Pods
		// (no garbage collector), so the tests see the provider's own
		// replacements. The API server runs without ServiceAccount
		// admission (see internal/planes), so Pods need no "default"
		// ServiceAccount.
		Planes: []planes.PlaneSpec{{Name: "cell", CRDDirs: []string{crdDir()}}},
		Log:    logs,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop() // deferred in run, not TestMain: os.Exit skips defers

	cfg := env.Plane("cell").Config()
	cfg.QPS, cfg.Burst = -1, 0
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, err := startManager(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		code = 1
	}
	return code
}

// startManager runs the cell controllers and the Kubernetes provider, with
// the Pod cache restricted as compute-manager restricts it.
func startManager(ctx context.Context, cfg *rest.Config) (<-chan error, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: kubernetes.CacheByObject()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the manager: %w", err)
	}
	if err := cell.Setup(mgr, cell.Options{
		Controllers: &cell.ControllerOptions{},
		Provider:    cell.KubernetesProvider{RecheckAfter: recheck},
	}); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
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
	return s
}
