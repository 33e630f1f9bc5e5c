package quota

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig with one context per name → server,
// and current as the current context.
func writeKubeconfig(t *testing.T, contexts map[string]string, current string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for name, server := range contexts {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = current
	path := filepath.Join(t.TempDir(), "quota.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubeconfigPlanes(t *testing.T) {
	tests := map[string]struct {
		contexts map[string]string
		current  string
		project  string
		wantHost string
		wantErr  error
	}{
		"a context named after the project reaches that project": {
			contexts: map[string]string{"p1": "https://p1.example", "local": "https://local.example"}, current: "local",
			project: "p1", wantHost: "https://p1.example",
		},
		"any other project goes through the current context": {
			contexts: map[string]string{"p1": "https://p1.example", "local": "https://local.example"}, current: "local",
			project: "p2", wantHost: "https://local.example",
		},
		"without a current context an unknown project is not found": {
			contexts: map[string]string{"p1": "https://p1.example"},
			project:  "p2", wantErr: ErrProjectNotFound,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := NewKubeconfigPlanes(writeKubeconfig(t, tc.contexts, tc.current))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := p.configFor(tc.project)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if cfg.Host != tc.wantHost {
				t.Errorf("host = %q, want %q", cfg.Host, tc.wantHost)
			}
			if cfg.QPS != defaultQPS || cfg.Burst != defaultBurst {
				t.Errorf("rate limits = %v/%d, want the quota defaults %v/%d", cfg.QPS, cfg.Burst, defaultQPS, defaultBurst)
			}
		})
	}
}

func TestLoadPlanes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.kubeconfig")
	tests := map[string]struct {
		path     string
		milo     bool
		wantErr  bool
		wantMilo bool
	}{
		"a configured but missing kubeconfig is an error, never quota silently off": {path: missing, wantErr: true},
		"a configured but missing kubeconfig is an error in Milo mode too":          {path: missing, milo: true, wantErr: true},
		"a kubeconfig reaches planes directly":                                      {path: "ok"},
		"in Milo mode the kubeconfig is Milo's API host":                            {path: "ok", milo: true, wantMilo: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := tc.path
			if path == "ok" {
				path = writeKubeconfig(t, map[string]string{"milo": "https://api.example"}, "milo")
			}
			p, err := LoadPlanes(path, tc.milo)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if _, statErr := os.Stat(path); statErr == nil {
					t.Errorf("error for an existing file: %v", err)
				}
				return
			}
			if _, isMilo := p.(*MiloPlanes); isMilo != tc.wantMilo {
				t.Errorf("planes = %T, want Milo %v", p, tc.wantMilo)
			}
		})
	}
}

func TestMiloPlanesRefuseNamesThatAreNotProjects(t *testing.T) {
	p, err := NewMiloPlanes(&restConfigForTest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ClientFor("../../api/v1"); !errors.Is(err, ErrProjectNotFound) {
		t.Errorf("ClientFor(path traversal) error = %v, want ErrProjectNotFound", err)
	}
}

// restConfigForTest is a configuration that is never dialled.
var restConfigForTest = rest.Config{Host: "https://api.example"}
