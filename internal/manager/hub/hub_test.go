package hub

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

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

func TestNewClusterCache(t *testing.T) {
	tests := map[string]struct {
		city string
		// cached says, per label set of a WorkloadDeployment or Instance,
		// whether the cache holds it; nil when the kind is not narrowed.
		wds, instances map[string]bool
	}{
		"without a city every city's objects are cached": {},
		"a cell's city narrows WorkloadDeployments and Instances to it": {
			city:      "DFW",
			wds:       map[string]bool{"DFW": true, "LHR": false, "": false},
			instances: map[string]bool{"DFW": true, "LHR": false, "": false},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// NewCluster's options, in its order (creating the cluster
			// itself asks a server for the kinds' mappings).
			var got cluster.Options
			defaults(&got)
			ForCity(tc.city)(&got)
			if got.Cache.DefaultTransform == nil {
				t.Fatal("the hub cache keeps managedFields: no DefaultTransform")
			}
			obj := &corev1.Namespace{}
			obj.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
			out, err := got.Cache.DefaultTransform(obj)
			if err != nil || len(out.(*corev1.Namespace).ManagedFields) != 0 {
				t.Errorf("DefaultTransform() = %v, %v; want the object without managedFields", out, err)
			}
			check := func(kind string, obj client.Object, label string, want map[string]bool) {
				var by *cache.ByObject
				for o, b := range got.Cache.ByObject {
					if reflect.TypeOf(o) == reflect.TypeOf(obj) {
						by = &b
					}
				}
				if want == nil {
					if by != nil {
						t.Errorf("%s are narrowed: %v", kind, by.Label)
					}
					return
				}
				if by == nil || by.Label == nil {
					t.Fatalf("%s are not narrowed", kind)
				}
				for city, cached := range want {
					set := labels.Set{}
					if city != "" {
						set[label] = city
					}
					if by.Label.Matches(set) != cached {
						t.Errorf("%s of city %q: cached %v, want %v", kind, city, !cached, cached)
					}
				}
			}
			check("WorkloadDeployments", &computev1alpha.WorkloadDeployment{}, computev1alpha.CityCodeTopologyLabel, tc.wds)
			check("Instances", &computev1alpha.Instance{}, computev1alpha.CityCodeLabel, tc.instances)
		})
	}
}
