package cell

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// newManager returns a manager that is never started, so it needs no
// apiserver.
func newManager(t *testing.T, withCompute, withNetworking bool) ctrl.Manager {
	t.Helper()
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	if withCompute {
		utilruntime.Must(computev1alpha.AddToScheme(s))
	}
	if withNetworking {
		utilruntime.Must(networkingv1alpha.AddToScheme(s))
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: s,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			for _, kind := range []string{computev1alpha.InstanceKind, computev1alpha.WorkloadDeploymentKind} {
				m.Add(computev1alpha.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
			}
			// The companions' cache of the referenced data.
			for _, kind := range []string{"ConfigMap", "Secret"} {
				m.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
			}
			for _, kind := range []string{networkingv1alpha.NetworkBindingKind, networkingv1alpha.SubnetKind} {
				m.Add(networkingv1alpha.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
			}
			return m, nil
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several cases register the same controllers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func TestSetup(t *testing.T) {
	tests := map[string]struct {
		withCompute, withNetworking bool
		setup                       func(ctrl.Manager) error
		wantErr                     string
	}{
		"the cell controllers register with a compute scheme": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Controllers: &ControllerOptions{}}) },
		},
		"with NetworkingIntegration they register with the networking scheme": {
			withCompute: true, withNetworking: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{Controllers: &ControllerOptions{}, NetworkingIntegration: true})
			},
		},
		"NetworkingIntegration without the networking scheme fails with the fix": {
			withCompute: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{Controllers: &ControllerOptions{}, NetworkingIntegration: true})
			},
			wantErr: "add networkingv1alpha.AddToScheme",
		},
		"the networking stand-in registers with defaults": {
			withCompute: true, withNetworking: true,
			setup: func(m ctrl.Manager) error { return Setup(m, Options{Networking: &NetOptions{}}) },
		},
		"an invalid networking pool is refused": {
			withCompute: true, withNetworking: true,
			setup:   func(m ctrl.Manager) error { return Setup(m, Options{Networking: &NetOptions{CIDR: "10.0.0.0/31"}}) },
			wantErr: "too small",
		},
		"a scheme without compute fails with the fix": {
			setup:   func(m ctrl.Manager) error { return Setup(m, Options{Controllers: &ControllerOptions{}}) },
			wantErr: "add computev1alpha.AddToScheme",
		},
		"the simulated provider registers with defaults": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Provider: SimulatedProvider{}}) },
		},
		"a negative provider delay is refused": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Provider: SimulatedProvider{Delay: -time.Second}}) },
			wantErr:     "delay -1s is negative",
		},
		"an invalid provider range is refused": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Provider: SimulatedProvider{CIDR: "10.0.0.0"}}) },
			wantErr:     `invalid address range "10.0.0.0"`,
		},
		"the kubernetes provider registers with defaults": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Provider: KubernetesProvider{}}) },
		},
		"the kubernetes provider needs the compute scheme": {
			setup:   func(m ctrl.Manager) error { return Setup(m, Options{Provider: KubernetesProvider{}}) },
			wantErr: "add computev1alpha.AddToScheme",
		},
		"a negative recheck interval is refused": {
			withCompute: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{Provider: KubernetesProvider{RecheckAfter: -time.Second}})
			},
			wantErr: "RecheckAfter -1s is negative",
		},
		"an allocation ratio below 1 is refused": {
			withCompute: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{Provider: KubernetesProvider{AllocationRatio: 0.5}})
			},
			wantErr: "AllocationRatio 0.5 must be at least 1",
		},
		"an invalid external range is refused": {
			withCompute: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{Provider: SimulatedProvider{ExternalCIDR: "10.0.0.0/32"}})
			},
			wantErr: "too small",
		},
		"the whole cell registers in one call": {
			withCompute: true, withNetworking: true,
			setup: func(m ctrl.Manager) error {
				return Setup(m, Options{
					Controllers:           &ControllerOptions{},
					Provider:              SimulatedProvider{},
					Networking:            &NetOptions{},
					NetworkingIntegration: true,
				})
			},
		},
		"the networking stand-in needs the networking scheme": {
			withCompute: true,
			setup:       func(m ctrl.Manager) error { return Setup(m, Options{Networking: &NetOptions{}}) },
			wantErr:     "add networkingv1alpha.AddToScheme",
		},
		"nothing to run registers nothing and needs no scheme": {
			setup: func(m ctrl.Manager) error { return Setup(m, Options{}) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.setup(newManager(t, tc.withCompute, tc.withNetworking))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
