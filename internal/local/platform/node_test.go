//go:build linux

package platform

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestNodesAreCitiesOfThePlatformAllOrNone(t *testing.T) {
	cities := []string{"DFW", "LHR", "SIN"}
	for _, tc := range []struct {
		in      []string
		want    []string
		wantErr string
	}{
		{in: nil, want: nil},
		{in: []string{"all"}, want: cities},
		{in: []string{"NONE"}, want: nil},
		{in: []string{"dfw", " lhr "}, want: []string{"DFW", "LHR"}},
		{in: []string{"NRT"}, wantErr: `no city "NRT" for a node`},
		{in: []string{"DFW", "dfw"}, wantErr: `node city "DFW" is listed twice`},
	} {
		got, errs := normalizeNodes(tc.in, cities, nil)
		switch {
		case tc.wantErr != "":
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr) {
				t.Errorf("normalizeNodes(%q): errors %v, want one containing %q", tc.in, errs, tc.wantErr)
			}
		case len(errs) > 0 || !slices.Equal(got, tc.want):
			t.Errorf("normalizeNodes(%q) = %q, %v; want %q", tc.in, got, errs, tc.want)
		}
	}
}

func TestANodesConfigurationsNameItsOwnDirectoriesSocketAndRange(t *testing.T) {
	n := nodePlan{
		NodeRecord: NodeRecord{Name: "node-dfw", City: "DFW", Dir: "/s/nodes/dfw", Socket: "/run/compute-local-1/dfw.sock",
			RuncRoot: "/s/nodes/dfw/runc", Bridge: "compute-dfw", PodCIDR: "10.244.1.0/24"},
		kubeletPort: 10250, kubeletHealth: 10248, cniConfDir: "/s/nodes/dfw/cni", address: "192.0.2.7",
	}
	var cni struct {
		Plugins []struct {
			Type, Bridge string
			IPAM         struct {
				Ranges  [][]struct{ Subnet string }
				DataDir string
			}
		}
	}
	if err := json.Unmarshal([]byte(cniConfig(n)), &cni); err != nil {
		t.Fatalf("the CNI configuration is not JSON: %v", err)
	}
	p := cni.Plugins[0]
	if p.Type != "bridge" || p.Bridge != "compute-dfw" || p.IPAM.Ranges[0][0].Subnet != "10.244.1.0/24" || !strings.HasPrefix(p.IPAM.DataDir, n.Dir) {
		t.Errorf("CNI configuration: %+v", p)
	}
	var kubelet map[string]any
	if err := yaml.Unmarshal([]byte(kubeletConfig(n, "/s/pki/ca.crt")), &kubelet); err != nil {
		t.Fatalf("the kubelet configuration is not YAML: %v", err)
	}
	for k, want := range map[string]any{
		"containerRuntimeEndpoint": "unix:///run/compute-local-1/dfw.sock", "cgroupsPerQOS": false, "failCgroupV1": false,
		"podCIDR": "10.244.1.0/24", "address": "192.0.2.7", "port": float64(10250), "healthzPort": float64(10248),
		"healthzBindAddress": "127.0.0.1", "tlsCertFile": "/s/nodes/dfw/serving/tls.crt", "tlsPrivateKeyFile": "/s/nodes/dfw/serving/tls.key",
	} {
		if kubelet[k] != want {
			t.Errorf("kubelet %s = %v, want %v", k, kubelet[k], want)
		}
	}
	cd := containerdConfig(n, "127.0.0.1:5000")
	for _, want := range []string{`address = "/run/compute-local-1/dfw.sock"`, `Root = "/s/nodes/dfw/runc"`,
		`sandbox_image = "127.0.0.1:5000/pause:1"`, `conf_dir = "/s/nodes/dfw/cni"`, "restrict_oom_score_adj = true"} {
		if !strings.Contains(cd, want) {
			t.Errorf("containerd configuration lacks %s:\n%s", want, cd)
		}
	}
	if !strings.Contains(registryHosts("127.0.0.1:5000"), `server = "http://127.0.0.1:5000"`) {
		t.Error("containerd must reach the local registry over HTTP")
	}
}

func TestMountPointsAreUnescaped(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b/c`); got != "/tmp/a b/c" {
		t.Errorf("unescapeMount = %q", got)
	}
	if got := unescapeMount("/plain"); got != "/plain" {
		t.Errorf("unescapeMount = %q", got)
	}
}

func TestSocketDirIsShortAndPerStateDirectory(t *testing.T) {
	a, b := socketDir("/a/very/long/state/directory/"+strings.Repeat("x", 200)), socketDir("/other")
	if a == b || len(a)+len("/dfw.sock.ttrpc") > 107 {
		t.Errorf("socketDir gives %q and %q", a, b)
	}
}
