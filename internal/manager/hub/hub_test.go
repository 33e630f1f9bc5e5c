package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestLoadConfig(t *testing.T) {
	valid := filepath.Join(t.TempDir(), "hub.kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: hub, context: {cluster: hub, user: admin}}]
current-context: hub
users: [{name: admin, user: {token: t}}]
`
	if err := os.WriteFile(valid, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path    string
		wantErr string
	}{
		"a readable kubeconfig loads":           {path: valid},
		"no path names the flag":                {wantErr: "--federation-kubeconfig is not set"},
		"a missing file names the flag":         {path: "/nonexistent/hub", wantErr: `--federation-kubeconfig "/nonexistent/hub" cannot be read`},
		"a file that is not a kubeconfig fails": {path: writeFile(t, "not: [a kubeconfig"), wantErr: "failed to load --federation-kubeconfig"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadConfig(tc.path)
			if tc.wantErr == "" {
				if err != nil || cfg.Host != "https://127.0.0.1:6443" {
					t.Fatalf("LoadConfig() = %v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("LoadConfig() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewScheme(t *testing.T) {
	s := NewScheme()
	for _, gvk := range []string{"WorkloadDeployment", "Instance"} {
		if !s.Recognizes(computev1alpha.GroupVersion.WithKind(gvk)) {
			t.Errorf("the hub scheme does not know %s", gvk)
		}
	}
	if !s.Recognizes(policyv1alpha1.SchemeGroupVersion.WithKind("PropagationPolicy")) {
		t.Error("the hub scheme does not know PropagationPolicy")
	}
}

// writeFile writes content to a temporary file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
