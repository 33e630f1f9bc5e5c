package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/quota"
)

// quotaKubeconfig is a kubeconfig with one context per project.
const quotaKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: project-a
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: admin
  user: {token: secret}
contexts:
- name: a
  context: {cluster: project-a, user: admin}
current-context: a
`

// writeQuotaKubeconfig writes quotaKubeconfig to a temporary file.
func writeQuotaKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "quota.kubeconfig")
	if err := os.WriteFile(path, []byte(quotaKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseOptions parses compute-manager's command line into Options.
func parseOptions(t *testing.T, args []string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(fs); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestValidateQuota(t *testing.T) {
	tests := map[string]struct {
		// args may name the test's quota kubeconfig as $QUOTA.
		args    []string
		wantErr []string
	}{
		"a cell without quota is valid (quota is disabled)": {
			args: []string{"--enable-cell-controllers"},
		},
		"a cell with a quota kubeconfig and its name is valid": {
			args: []string{"--enable-cell-controllers", "--quota-kubeconfig=$QUOTA", "--cell-name=cell-dfw"},
		},
		"a cell reaching quota through Milo is valid": {
			args: []string{"--enable-cell-controllers", "--quota-kubeconfig=$QUOTA", "--quota-milo", "--cell-name=cell-dfw"},
		},
		"a quota kubeconfig that does not exist names the flag": {
			args:    []string{"--enable-cell-controllers", "--quota-kubeconfig=/nonexistent/quota", "--cell-name=cell-dfw"},
			wantErr: []string{`--quota-kubeconfig "/nonexistent/quota" cannot be read`},
		},
		"a quota kubeconfig without the cell's name names the missing flag": {
			args:    []string{"--enable-cell-controllers", "--quota-kubeconfig=$QUOTA"},
			wantErr: []string{"--cell-name is required with --quota-kubeconfig"},
		},
		"a cell name that cannot be a label value names the flag": {
			args:    []string{"--enable-cell-controllers", "--quota-kubeconfig=$QUOTA", "--cell-name=cell dfw!"},
			wantErr: []string{`--cell-name "cell dfw!" is not a valid label value`},
		},
		"Milo without a kubeconfig names both flags": {
			args:    []string{"--enable-cell-controllers", "--quota-milo"},
			wantErr: []string{"--quota-milo needs --quota-kubeconfig"},
		},
		"quota flags without the cell role are refused, each by name": {
			args: []string{"--enable-simulated-provider", "--quota-kubeconfig=$QUOTA", "--quota-milo", "--cell-name=cell-dfw"},
			wantErr: []string{
				"--quota-kubeconfig configures the cell role's quota",
				"--quota-milo configures the cell role's quota",
				"--cell-name configures the cell role's quota",
			},
		},
		"every quota error is reported at once": {
			args:    []string{"--enable-cell-controllers", "--quota-kubeconfig=/nonexistent/quota"},
			wantErr: []string{"--quota-kubeconfig", "--cell-name is required"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeQuotaKubeconfig(t)
			args := make([]string, 0, len(tc.args))
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "$QUOTA", path))
			}
			err := parseOptions(t, args).Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want errors %q, got none", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// enforcementMetric reads compute_quota_enforcement_enabled.
func enforcementMetric(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == quota.EnforcementEnabledMetric {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not registered", quota.EnforcementEnabledMetric)
	return 0
}

func TestQuotaClient(t *testing.T) {
	t.Run("without a quota kubeconfig quota is disabled and the metric says so", func(t *testing.T) {
		q := QuotaOptions{}
		c, err := q.quotaClient(nil)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			t.Fatalf("want no quota client (an untyped nil), got %#v", c)
		}
		if got := enforcementMetric(t); got != 0 {
			t.Errorf("%s = %v, want 0", quota.EnforcementEnabledMetric, got)
		}
	})
	t.Run("a kubeconfig that is not one names the flag", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "quota.kubeconfig")
		if err := os.WriteFile(path, []byte("not: [a kubeconfig"), 0o600); err != nil {
			t.Fatal(err)
		}
		q := QuotaOptions{Kubeconfig: path, CellName: "cell-dfw"}
		_, err := q.quotaClient(nil)
		if err == nil || !strings.HasPrefix(err.Error(), "--quota-kubeconfig: ") {
			t.Fatalf("want an error naming --quota-kubeconfig, got %v", err)
		}
	})
	t.Run("with a quota kubeconfig the cell gets a client that watches its claims", func(t *testing.T) {
		mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		if err != nil {
			t.Fatal(err)
		}
		q := QuotaOptions{Kubeconfig: writeQuotaKubeconfig(t), CellName: "cell-dfw"}
		c, err := q.quotaClient(mgr)
		if err != nil {
			t.Fatal(err)
		}
		qc, ok := c.(*quota.Client)
		if !ok {
			t.Fatalf("want a *quota.Client, got %T", c)
		}
		if qc.SourceCluster() != "cell-dfw" {
			t.Errorf("claims are labelled with %q, want cell-dfw", qc.SourceCluster())
		}
		srcs, err := qc.WatchSources(mgr)
		if err != nil || len(srcs) != 1 {
			t.Errorf("want one claim watch for the one quota plane, got %d (%v)", len(srcs), err)
		}
		if got := enforcementMetric(t); got != 1 {
			t.Errorf("%s = %v, want 1", quota.EnforcementEnabledMetric, got)
		}
	})
}

func TestTheSchemeKnowsTheQuotaTypes(t *testing.T) {
	s := management.NewScheme()
	if err := addQuotaTypes(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{
		quotav1alpha1.ResourceClaimKind, quotav1alpha1.ResourceGrantKind,
		quotav1alpha1.AllowanceBucketKind, quotav1alpha1.ResourceRegistrationKind,
	} {
		if !s.Recognizes(quotav1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("the manager's scheme does not know %s", quotav1alpha1.GroupVersion.WithKind(kind))
		}
	}
}
