package management

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/citycells/compute/internal/debugapi"
)

// DebugAPIOptions configure the debug API (internal/debugapi): an
// aggregated API of the project plane serving Instances' log and exec.
type DebugAPIOptions struct {
	// BindAddress is where it listens (host:port); empty turns it off.
	BindAddress string
	// CertDir holds its serving certificate (tls.crt, tls.key), valid for
	// the name of the Service its APIService names.
	CertDir string
	// RelayKubeconfig is the relay's identity in the federation plane
	// (clusters list and clusters/proxy only); empty means
	// --federation-kubeconfig's.
	RelayKubeconfig string
	// ResponseTimeout bounds the wait for a cell's first response.
	ResponseTimeout time.Duration
}

// AddFlags binds the options to fs.
func (o *DebugAPIOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "debug-api-bind-address", o.BindAddress,
		"Address (host:port) the debug API (instances' log and exec, an aggregated API of the project plane) listens on; empty turns it off.")
	fs.StringVar(&o.CertDir, "debug-api-cert-dir", o.CertDir,
		"Directory holding the debug API's serving tls.crt and tls.key.")
	fs.StringVar(&o.RelayKubeconfig, "debug-relay-kubeconfig", o.RelayKubeconfig,
		"Kubeconfig of the debug API's identity in the federation plane (list clusters, clusters/proxy); --federation-kubeconfig's when empty.")
	fs.DurationVar(&o.ResponseTimeout, "debug-api-response-timeout", debugapi.DefaultResponseTimeout,
		"How long the debug API waits for a cell's first response before answering that the city is unreachable.")
}

// Validate reports the options' errors, each naming its flag.
func (o DebugAPIOptions) Validate() error {
	if o.BindAddress == "" {
		return nil
	}
	var errs []error
	if o.CertDir == "" {
		errs = append(errs, errors.New("--debug-api-cert-dir is required with --debug-api-bind-address"))
	}
	if o.ResponseTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--debug-api-response-timeout must be positive, got %s", o.ResponseTimeout))
	}
	return errors.Join(errs...)
}

// setupDebugAPI adds the debug API to the role's local manager (the
// project plane in single mode), relaying with the relay kubeconfig's
// identity or hub's.
func setupDebugAPI(local ctrl.Manager, cfg, hub *rest.Config, o DebugAPIOptions) error {
	if o.BindAddress == "" {
		return nil
	}
	relay := hub
	if o.RelayKubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", o.RelayKubeconfig)
		if err != nil {
			return fmt.Errorf("failed to load --debug-relay-kubeconfig: %w", err)
		}
		relay = c
	}
	if relay == nil {
		return errors.New("the debug API needs the federation plane: set --federation-kubeconfig or --debug-relay-kubeconfig")
	}
	return local.Add(&debugapi.Runnable{
		Addr: o.BindAddress, CertDir: o.CertDir, Project: local.GetAPIReader(), ProjectConfig: rest.CopyConfig(cfg),
		Hub: rest.CopyConfig(relay), ResponseTimeout: o.ResponseTimeout,
	})
}
