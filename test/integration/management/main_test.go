// Package management tests the management role of compute-manager — project
// discovery in multi-project mode, the WorkloadReconciler, revision history
// and the admission webhooks — against real API servers: a host plane
// holding one kubeconfig Secret per project plane, and two project planes
// with the compute and networking CRDs and a kube-controller-manager running
// the garbage collector. The webhook server runs in the test process; each
// project plane calls it back at https://127.0.0.1:<port>/clusters/<plane>/...
package management

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/projects"
	"github.com/citycells/compute/internal/webhook"
	"github.com/citycells/compute/test/integration/fixtures"
)

// Plane names. The project planes' names are also their cluster names:
// the names of their kubeconfig Secrets.
const (
	hostPlane = "host"
	projectA  = "project-a"
	projectB  = "project-b"
	// soloPlane is served by a second management role in single mode.
	soloPlane = "solo"
)

// Identities the tests act as.
const (
	// managerUser is compute-manager's identity in the project planes.
	managerUser = "compute-manager"
	// developer creates Workloads; system:masters spares the tests RBAC.
	developer = "dev@example.com"
	// locationNamespace holds the Locations of each project plane.
	locationNamespace = "datum-locations"
	// secretNamespace holds the kubeconfig Secrets in the host plane.
	secretNamespace = "compute-system"
)

var (
	env *fixtures.Env
	// clients are the developer's clients of each project plane.
	clients = map[string]client.Client{}
)

func TestMain(m *testing.M) {
	crds := []string{fixtures.CRDDir(), fixtures.ExternalCRDDir()}
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{
			{Name: hostPlane},
			{Name: projectA, ControllerManager: true, CRDDirs: crds},
			{Name: projectB, ControllerManager: true, CRDDirs: crds},
			{Name: soloPlane, ControllerManager: true, CRDDirs: crds},
		},
		Setup: func(ctx context.Context, e *fixtures.Env) error {
			env = e
			if err := start(ctx); err != nil {
				return err
			}
			return startSingle(ctx)
		},
	}))
}

// start registers the project planes in the host plane, starts the
// management role and registers its webhooks with the project planes; it
// returns once both planes are admitted through the webhooks.
func start(ctx context.Context) error {
	host := env.Client(hostPlane)
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}); err != nil {
		return fmt.Errorf("failed to create the secret namespace: %w", err)
	}
	for _, name := range []string{projectA, projectB} {
		if err := registerProject(ctx, host, name); err != nil {
			return err
		}
	}

	port, certDir, err := webhookServing()
	if err != nil {
		return err
	}
	opts := management.NewOptions()
	opts.Projects.Mode = projects.ModeKubeconfig
	opts.Projects.SecretNamespace = secretNamespace
	opts.Webhook.Host, opts.Webhook.Port, opts.Webhook.CertDir = "127.0.0.1", port, certDir
	opts.Webhook.DeprecationGracePeriod = instanceTypeGracePeriod
	opts.Manager = ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	role, err := management.Setup(env.Plane(hostPlane).Config(), opts)
	if err != nil {
		return err
	}
	env.Go("management role", role.Start)

	for _, name := range []string{projectA, projectB} {
		if err := installWebhooks(ctx, name, name, port); err != nil {
			return err
		}
	}
	return waitForAdmission(ctx, projectA, projectB)
}

// startSingle starts a second management role in single mode against the
// solo plane, its webhooks registered at the plain paths.
func startSingle(ctx context.Context) error {
	if err := registerClient(ctx, soloPlane); err != nil {
		return err
	}
	port, certDir, err := webhookServing()
	if err != nil {
		return err
	}
	cfg, err := env.Plane(soloPlane).ClientConfig(managerUser, "system:masters")
	if err != nil {
		return err
	}
	opts := management.NewOptions()
	opts.Webhook.Host, opts.Webhook.Port, opts.Webhook.CertDir = "127.0.0.1", port, certDir
	// As compute-manager with both roles and no federation plane: the
	// companions of referenced data go next to their sources.
	opts.LocalCompanions = true
	opts.Manager = ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The other roles in this process have these controllers too.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	}
	role, err := management.Setup(cfg, opts)
	if err != nil {
		return err
	}
	env.Go("single-mode management role", role.Start)
	if err := installWebhooks(ctx, soloPlane, "", port); err != nil {
		return err
	}
	return waitForAdmission(ctx, soloPlane)
}

// registerProject registers a project plane with compute-manager through
// its kubeconfig Secret, and prepares it for the tests.
func registerProject(ctx context.Context, host client.Client, name string) error {
	kc, err := env.Plane(name).ClientKubeconfig(managerUser, "system:masters")
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: secretNamespace,
			Labels: map[string]string{kubeconfig.DefaultKubeconfigSecretLabel: "true"},
		},
		Data: map[string][]byte{kubeconfig.DefaultKubeconfigSecretKey: kc},
	}
	if err := host.Create(ctx, secret); err != nil {
		return fmt.Errorf("failed to register %s: %w", name, err)
	}
	return registerClient(ctx, name)
}

// registerClient creates the plane's developer client and its Location
// namespace.
func registerClient(ctx context.Context, name string) error {
	cfg, err := env.Plane(name).ClientConfig(developer, "system:masters")
	if err != nil {
		return err
	}
	clients[name] = env.ClientFor(cfg)
	return clients[name].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: locationNamespace}})
}

// webhookServing picks a port and writes a serving certificate the planes
// trust for 127.0.0.1.
func webhookServing() (int, string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, "", err
	}
	crt, key, err := env.IssueServingCert("compute-webhooks", "127.0.0.1")
	if err != nil {
		return 0, "", err
	}
	dir := filepath.Join(env.Dir(), fmt.Sprintf("webhook-certs-%d", port))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return 0, "", err
	}
	return port, dir, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
}

// installWebhooks registers the webhooks with a project plane, at the
// paths that carry cluster (none in single mode).
func installWebhooks(ctx context.Context, name, cluster string, port int) error {
	mutating, validating := webhook.Configurations(webhook.ClientConfig{
		URL:      fmt.Sprintf("https://127.0.0.1:%d", port),
		CABundle: env.CAPEM(),
		Cluster:  cluster,
		// The manager's own writes need no review (as the overlays and
		// the local platform register it).
		SkipProjectionWriters: []string{managerUser},
	})
	c := env.Client(name)
	if err := c.Create(ctx, mutating); err != nil {
		return fmt.Errorf("failed to register the mutating webhooks with %s: %w", name, err)
	}
	if err := c.Create(ctx, validating); err != nil {
		return fmt.Errorf("failed to register the validating webhooks with %s: %w", name, err)
	}
	return nil
}

// waitForAdmission waits until each project plane's Workloads are admitted
// by the management role: a dry-run of an invalid Workload is denied by
// the validating webhook (the plane is engaged and the server is up).
func waitForAdmission(ctx context.Context, planes ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, name := range planes {
		for {
			w := makeWorkload("probe", "default").withPlacement("edge", 1, "XYZ").build()
			err := clients[name].Create(ctx, w, client.DryRunAll)
			if isWebhookDenial(err) && strings.Contains(err.Error(), "is not enabled for this project") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the webhooks of %s never answered; last error: %w", name, errors.Join(err, ctx.Err()))
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
