package names

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestWorkloadDeploymentName(t *testing.T) {
	tests := map[string]struct {
		workload, placement, city string
		uid                       types.UID
		wantPrefix                string
	}{
		"short names keep the workload and city readable": {
			workload: "web", uid: "u1", placement: "default", city: "DFW", wantPrefix: "web-dfw-",
		},
		"long workload names are truncated to fit 63 characters": {
			workload: strings.Repeat("a", 80), uid: "u1", placement: "p", city: "LHR", wantPrefix: strings.Repeat("a", 50) + "-lhr-",
		},
		"truncation never leaves a trailing dash before the suffix": {
			workload: strings.Repeat("a", 49) + "-b" + strings.Repeat("c", 20), uid: "u1", placement: "p", city: "SIN", wantPrefix: strings.Repeat("a", 49) + "-sin-",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := WorkloadDeploymentName(tc.workload, tc.uid, tc.placement, tc.city)
			if len(got) > MaxNameLength {
				t.Fatalf("name %q is %d characters, want at most %d", got, len(got), MaxNameLength)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("name %q is not a DNS label: %v", got, errs)
			}
			if !strings.HasPrefix(got, tc.wantPrefix) {
				t.Fatalf("name %q does not start with %q", got, tc.wantPrefix)
			}
			if again := WorkloadDeploymentName(tc.workload, tc.uid, tc.placement, tc.city); again != got {
				t.Fatalf("name is not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestWorkloadDeploymentNameIsUniquePerIdentity(t *testing.T) {
	type id struct {
		workload  string
		uid       types.UID
		placement string
		city      string
	}
	ids := []id{
		{"app-a", "u1", "b", "DFW"},
		{"app", "u1", "a-b", "DFW"},
		{"app", "u1", "a", "DFW"},
		{"app", "u1", "a", "LHR"},
		{"app", "u2", "a", "DFW"}, // recreated workload of the same name
		{"app", "u1", "ab", "DFW"},
		{"app", "u1", "a\x00b", "DFW"},
	}
	// Also many placements of one workload.
	for i := range 500 {
		ids = append(ids, id{"app", "u1", fmt.Sprintf("p%d", i), "DFW"})
	}
	seen := map[string]id{}
	for _, i := range ids {
		n := WorkloadDeploymentName(i.workload, i.uid, i.placement, i.city)
		if prev, dup := seen[n]; dup {
			t.Fatalf("%+v and %+v share the name %q", prev, i, n)
		}
		seen[n] = i
	}
}

func TestTemplateHash(t *testing.T) {
	base := func() *computev1alpha.InstanceTemplateSpec {
		return &computev1alpha.InstanceTemplateSpec{
			Metadata: computev1alpha.TemplateMetadata{Labels: map[string]string{"a": "1", "b": "2"}},
			Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
				Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
				Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "nginx:1"}}},
			}},
		}
	}
	h := TemplateHash(base())
	if errs := validation.IsValidLabelValue(h); len(errs) > 0 || h == "" {
		t.Fatalf("hash %q is not a label value: %v", h, errs)
	}
	if TemplateHash(base()) != h {
		t.Fatal("equal templates hash differently")
	}
	restarted := base()
	restarted.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "2026-01-01T00:00:00Z"}
	if TemplateHash(restarted) == h {
		t.Fatal("a restartedAt annotation did not change the hash")
	}
	image := base()
	image.Spec.Runtime.Sandbox.Containers[0].Image = "nginx:2"
	if TemplateHash(image) == h {
		t.Fatal("an image change did not change the hash")
	}
}

// storedTemplateHash is the hash compute gave testdata/stored-template.json
// before network interfaces had names, address families and reclaim
// policies, and containers envFrom and a securityContext, and before
// SHA-256: a stored Workload's template must still answer to it, or every
// Instance would be replaced. storedCurrentHash is its SHA-256 spelling.
const (
	storedTemplateHash = "dcd69f"
	storedCurrentHash  = "a2150b1e2590f2ba"
)

func TestTemplateHashOfAStoredTemplate(t *testing.T) {
	stored := func(t *testing.T) *computev1alpha.InstanceTemplateSpec {
		b, err := os.ReadFile("testdata/stored-template.json")
		if err != nil {
			t.Fatal(err)
		}
		tpl := &computev1alpha.InstanceTemplateSpec{}
		if err := json.Unmarshal(b, tpl); err != nil {
			t.Fatal(err)
		}
		return tpl
	}
	// readBack is the template as the API server returns it once the CRD
	// has the new fields: its schema defaults written on the interface.
	readBack := func(t *testing.T) *computev1alpha.InstanceTemplateSpec {
		tpl := stored(t)
		nic := &tpl.Spec.NetworkInterfaces[0]
		nic.Name, nic.IPFamilies, nic.ReclaimPolicy = "eth0", []computev1alpha.IPFamily{computev1alpha.IPv6}, computev1alpha.ReclaimDelete
		return tpl
	}
	same := map[string]func(t *testing.T) *computev1alpha.InstanceTemplateSpec{
		"the stored template keeps its hash":                             stored,
		"the stored template read back with its defaults keeps its hash": readBack,
	}
	for name, tpl := range same {
		t.Run(name, func(t *testing.T) {
			in := tpl(t)
			before := in.DeepCopy()
			h := HashesOf(in)
			if !h.Names(storedTemplateHash) || h.Normalize(storedTemplateHash) != h.Current ||
				h.Keep(storedTemplateHash) != storedTemplateHash || h.Keep("other") != h.Current {
				t.Fatalf("the template no longer answers to its stored hash %q", storedTemplateHash)
			}
			if got := TemplateHash(in); got != storedCurrentHash {
				t.Fatalf("TemplateHash = %q, want %q", got, storedCurrentHash)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Fatalf("TemplateHash changed its argument (-before +after):\n%s", diff)
			}
		})
	}
	changed := map[string]func(tpl *computev1alpha.InstanceTemplateSpec){
		"a second interface name changes it": func(tpl *computev1alpha.InstanceTemplateSpec) { tpl.Spec.NetworkInterfaces[0].Name = "eth1" },
		"IPv4 changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.NetworkInterfaces[0].IPFamilies = []computev1alpha.IPFamily{computev1alpha.IPv4}
		},
		"dual stack changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.NetworkInterfaces[0].IPFamilies = []computev1alpha.IPFamily{computev1alpha.IPv6, computev1alpha.IPv4}
		},
		"Retain changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.NetworkInterfaces[0].ReclaimPolicy = computev1alpha.ReclaimRetain
		},
		"an address request changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.NetworkInterfaces[0].Addresses = []computev1alpha.InstanceNetworkInterfaceAddressRequest{{Class: "public-ipv4"}}
		},
		"a runtime class changes it": func(tpl *computev1alpha.InstanceTemplateSpec) { tpl.Spec.Runtime.Class = "general-purpose" },
		"envFrom changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.Runtime.Sandbox.Containers[0].EnvFrom = []computev1alpha.EnvFromSource{{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "app"}}}
		},
		"a securityContext changes it": func(tpl *computev1alpha.InstanceTemplateSpec) {
			tpl.Spec.Runtime.Sandbox.Containers[0].SecurityContext = &computev1alpha.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
		},
	}
	for name, change := range changed {
		t.Run(name, func(t *testing.T) {
			tpl := readBack(t)
			change(tpl)
			if h := HashesOf(tpl); h.Names(storedTemplateHash) || h.Names(storedCurrentHash) {
				t.Fatal("the hash did not change")
			}
		})
	}
}

// TestTemplateHashOfCollidingTemplates: two templates an attacker crafted
// to share the old 32-bit hash (a birthday search over an env value) have
// different hashes now, and a hash stored by the current release names only
// its own template.
func TestTemplateHashOfCollidingTemplates(t *testing.T) {
	a, b := collidingTemplates(t)
	ha, hb := HashesOf(a), HashesOf(b)
	if ha.legacy != hb.legacy {
		t.Fatalf("the search found no collision: %q, %q", ha.legacy, hb.legacy)
	}
	if ha.Current == hb.Current {
		t.Fatalf("colliding templates share the hash %q", ha.Current)
	}
	if hb.Names(ha.Current) || ha.Names(hb.Current) {
		t.Fatal("a current hash names another template")
	}
	if len(ha.Current) != templateHashLength || validation.IsValidLabelValue(ha.Current) != nil {
		t.Fatalf("hash %q is not %d characters of a label value", ha.Current, templateHashLength)
	}
	if (TemplateHashes{}).Names("") || ha.Names("") {
		t.Fatal("the empty hash names a template")
	}
}

// collidingTemplates finds two templates that differ only in an env value
// and share the FNV-1a 32 hash: a birthday search, about 2^16 tries.
func collidingTemplates(t *testing.T) (a, b *computev1alpha.InstanceTemplateSpec) {
	t.Helper()
	tpl := func(pad int) *computev1alpha.InstanceTemplateSpec {
		return &computev1alpha.InstanceTemplateSpec{Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
			Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
				Name: "app", Image: "ghcr.io/example/app:1.0", Env: []computev1alpha.EnvVar{{Name: "PAD", Value: fmt.Sprint(pad)}},
			}}},
		}}}
	}
	// The canonical form of tpl(pad) is that of tpl(0) with the digits
	// replaced: hash only the bytes (HashesOf checks the pair found).
	enc, err := json.Marshal(CanonicalTemplate(tpl(0)))
	if err != nil {
		t.Fatal(err)
	}
	before, after, _ := strings.Cut(string(enc), `"PAD","value":"0"`)
	seen := map[uint32]int{}
	for pad := range 1 << 22 {
		h := fnv.New32a()
		_, _ = fmt.Fprintf(h, `%s"PAD","value":"%d"%s`, before, pad, after)
		if other, ok := seen[h.Sum32()]; ok {
			return tpl(other), tpl(pad)
		}
		seen[h.Sum32()] = pad
	}
	t.Fatal("no collision in 2^22 templates")
	return nil, nil
}

func TestUpstreamClusterName(t *testing.T) {
	tests := map[string]struct{ cluster, want string }{
		"a plain cluster name gets the prefix":  {"proj-a", "cluster-proj-a"},
		"slashes become underscores":            {"milo/proj-a", "cluster-milo_proj-a"},
		"the empty (single mode) cluster works": {"", "cluster-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := UpstreamClusterName(tc.cluster)
			if got != tc.want {
				t.Fatalf("UpstreamClusterName(%q) = %q, want %q", tc.cluster, got, tc.want)
			}
			if tc.cluster == "" {
				return
			}
			back, ok := ClusterFromUpstreamName(got)
			if !ok || back != tc.cluster {
				t.Fatalf("ClusterFromUpstreamName(%q) = %q, %v; want %q", got, back, ok, tc.cluster)
			}
		})
	}
	if _, ok := ClusterFromUpstreamName("proj-a"); ok {
		t.Fatal("a value without the prefix was accepted")
	}
}

func TestLabelKeysAreValid(t *testing.T) {
	for _, k := range []string{
		computev1alpha.WorkloadUIDLabel, computev1alpha.WorkloadNameLabel, computev1alpha.WorkloadDeploymentUIDLabel,
		computev1alpha.WorkloadDeploymentNameLabel, computev1alpha.InstanceIndexLabel, computev1alpha.CityCodeLabel,
		computev1alpha.PlacementNameLabel, computev1alpha.UpstreamClusterNameLabel, computev1alpha.UpstreamNamespaceLabel,
		computev1alpha.CityCodeTopologyLabel, computev1alpha.FederationNamespaceAnnotation, computev1alpha.ProjectionLabel,
		computev1alpha.InstanceNamespaceLabel, computev1alpha.SourceClusterLabel, computev1alpha.RestartedAtAnnotation,
	} {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("key %q is not a qualified name: %v", k, errs)
		}
	}
}

func TestNetworkContextNamesAreShortAndDistinct(t *testing.T) {
	if got := NetworkContextName("", "default", "DFW"); got != "default-dfw" {
		t.Errorf("NetworkContextName = %q, want default-dfw", got)
	}
	if got := NetworkContextName("shared", "blue", "LHR"); got != "shared-blue-lhr" {
		t.Errorf("NetworkContextName = %q, want shared-blue-lhr", got)
	}
	long := strings.Repeat("n", 80)
	a, b := NetworkContextName("", long, "DFW"), NetworkContextName("", long+"x", "DFW")
	if len(a) > MaxNameLength || len(b) > MaxNameLength || a == b {
		t.Errorf("long names %q and %q: want at most %d characters and distinct", a, b, MaxNameLength)
	}
}

// TestWorkloadDeploymentNameIsStable pins the names deployments were given
// before placement by Location: an upgrade that renamed them would
// recreate every Instance.
func TestWorkloadDeploymentNameIsStable(t *testing.T) {
	sum := sha256.Sum256([]byte("uid-1\x00edge\x00DFW"))
	want := "web-dfw-" + hex.EncodeToString(sum[:])[:8]
	if got := WorkloadDeploymentName("web", "uid-1", "edge", "DFW"); got != want {
		t.Fatalf("WorkloadDeploymentName = %q, want %q (the name existing deployments carry)", got, want)
	}
}

func TestLocationDeploymentName(t *testing.T) {
	a := LocationDeploymentName("web", "uid-1", "edge", "DFW", "locs", "dfw-1")
	b := LocationDeploymentName("web", "uid-1", "edge", "DFW", "locs", "dfw-2")
	legacy := WorkloadDeploymentName("web", "uid-1", "edge", "DFW")
	if a == b || a == legacy || b == legacy {
		t.Fatalf("two Locations of a city and the city's legacy deployment need three names, got %q, %q, %q", a, b, legacy)
	}
	if !strings.HasPrefix(a, "web-dfw-") {
		t.Fatalf("name %q does not keep the workload and city readable", a)
	}
	long := LocationDeploymentName(strings.Repeat("w", 80), "uid-1", "edge", "DFW", "locs", "dfw-1")
	if len(long) > MaxNameLength {
		t.Fatalf("name %q is %d characters, want at most %d", long, len(long), MaxNameLength)
	}
}
