package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		args    []string
		env     string
		wantErr []string
	}{
		"the cell role alone is valid": {
			args: []string{"--enable-cell-controllers"},
		},
		"no role at all names both role flags": {
			wantErr: []string{"--enable-management-controllers", "--enable-cell-controllers"},
		},
		"a kubeconfig that does not exist names the flag": {
			args:    []string{"--enable-cell-controllers", "--kubeconfig=/nonexistent/kubeconfig"},
			wantErr: []string{`--kubeconfig "/nonexistent/kubeconfig" cannot be read`},
		},
		"a negative provider delay names the flag": {
			args:    []string{"--enable-simulated-provider", "--simulated-provider-delay=-1s"},
			wantErr: []string{"--simulated-provider-delay must not be negative"},
		},
		"every error is reported at once": {
			args:    []string{"--kubeconfig=/nonexistent", "--simulated-provider-delay=-1s", "--enable-simulated-provider"},
			wantErr: []string{"--kubeconfig", "--simulated-provider-delay"},
		},
		"the kubernetes runtime provider with the cell role is valid": {
			args: []string{"--enable-cell-controllers", "--runtime-provider=kubernetes"},
		},
		"an unknown runtime provider names the flag and the providers": {
			args:    []string{"--enable-cell-controllers", "--runtime-provider=docker"},
			wantErr: []string{`--runtime-provider "docker" is not a runtime provider: use simulated or kubernetes`},
		},
		"the deprecated simulated flag agreeing with --runtime-provider is valid": {
			args: []string{"--enable-cell-controllers", "--enable-simulated-provider", "--runtime-provider=simulated"},
		},
		"the deprecated simulated flag contradicting --runtime-provider names both": {
			args:    []string{"--enable-cell-controllers", "--enable-simulated-provider", "--runtime-provider=kubernetes"},
			wantErr: []string{"--enable-simulated-provider (deprecated: it means --runtime-provider=simulated) contradicts --runtime-provider=kubernetes"},
		},
		"a negative provider delay with --runtime-provider=simulated names the flag": {
			args:    []string{"--runtime-provider=simulated", "--simulated-provider-delay=-1s"},
			wantErr: []string{"--simulated-provider-delay must not be negative"},
		},
		"the simulated provider's delay is not checked for the kubernetes provider": {
			args: []string{"--enable-cell-controllers", "--runtime-provider=kubernetes", "--simulated-provider-delay=-1s"},
		},
		"an allocation ratio for the kubernetes provider is valid": {
			args: []string{"--enable-cell-controllers", "--runtime-provider=kubernetes", "--runtime-allocation-ratio=32"},
		},
		"an allocation ratio below 1 names the flag": {
			args:    []string{"--enable-cell-controllers", "--runtime-provider=kubernetes", "--runtime-allocation-ratio=0.5"},
			wantErr: []string{"--runtime-allocation-ratio must be a number of at least 1, got 0.5"},
		},
		"an enforcing cell's network policy mode is valid": {
			args: []string{"--enable-cell-controllers", "--runtime-provider=kubernetes", "--network-policy-enforcement=enforced"},
		},
		"an unknown network policy mode names the flag and the modes": {
			args:    []string{"--enable-cell-controllers", "--runtime-provider=kubernetes", "--network-policy-enforcement=calico"},
			wantErr: []string{`--network-policy-enforcement must be one of none, enforced, got "calico"`},
		},
		"the management role without the federation plane names the flag": {
			args:    []string{"--enable-management-controllers"},
			wantErr: []string{"--federation-kubeconfig is required with --enable-management-controllers"},
		},
		"a federation kubeconfig that does not exist names the flag": {
			args:    []string{"--enable-cell-controllers", "--federation-kubeconfig=/nonexistent/hub"},
			wantErr: []string{`--federation-kubeconfig "/nonexistent/hub" cannot be read`},
		},
		"a cell name that is no Lease name names the flag": {
			args:    []string{"--enable-cell-controllers", "--cell-name=Cell_DFW"},
			wantErr: []string{`--cell-name "Cell_DFW" is not a valid name`},
		},
		"a city code that is no label value names the flag": {
			args:    []string{"--enable-cell-controllers", "--cell-city-code=D F W"},
			wantErr: []string{`--cell-city-code "D F W" is not a valid city code`},
		},
		"a city code is valid": {
			args: []string{"--enable-cell-controllers", "--cell-city-code=DFW"},
		},
		"FEATURE_GATES is read when the flag is absent": {
			args: []string{"--enable-cell-controllers"}, env: "NetworkingIntegration=true",
		},
		"an unknown feature gate in FEATURE_GATES fails": {
			args: []string{"--enable-cell-controllers"}, env: "Bogus=true", wantErr: []string{"FEATURE_GATES"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("FEATURE_GATES", tc.env)
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Complete(fs)
			if err == nil {
				err = o.Validate()
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error mentioning %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestRuntimeProvider(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"none by default":   {want: RuntimeProviderNone},
		"the flag names it": {args: []string{"--runtime-provider=kubernetes"}, want: RuntimeProviderKubernetes},
		"the deprecated flag means the simulated one": {args: []string{"--enable-simulated-provider"}, want: RuntimeProviderSimulated},
		"the deprecated flag set to false means none": {args: []string{"--enable-simulated-provider=false"}, want: RuntimeProviderNone},
		"both flags agreeing mean the simulated one":  {args: []string{"--enable-simulated-provider", "--runtime-provider=simulated"}, want: RuntimeProviderSimulated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := o.runtimeProvider(); got != tc.want {
				t.Errorf("runtimeProvider() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheDeprecatedFieldAloneStillRunsTheSimulatedProvider(t *testing.T) {
	// Programs that build Options in Go (test/integration/install) set
	// the field, not the flag, and call Validate without Complete.
	o := NewOptions()
	o.EnableCell, o.EnableSimulatedProvider = true, true
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := o.runtimeProvider(); got != RuntimeProviderSimulated {
		t.Errorf("runtimeProvider() = %q, want %q", got, RuntimeProviderSimulated)
	}
}

func TestValidateManagementWithFederation(t *testing.T) {
	hub := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(hub, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--enable-management-controllers", "--federation-kubeconfig=" + hub}); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(fs); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the management role with a federation kubeconfig is valid, got %v", err)
	}
}
