//go:build linux

package platform

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCellManagersGetTheProviderDelayOnlyWhenSet(t *testing.T) {
	flags := parseManagerFlags("--enable-cell-controllers --enable-simulated-provider --kubeconfig --simulated-provider-delay duration")
	ports := managerPorts{metrics: 7001, probe: 7002}
	args, _ := managerArgs(managerRole{cell: true, kubeconfig: "/k"}, flags, "/h", ports)
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--simulated-provider-delay") }) {
		t.Errorf("an unset delay is passed: %v", args)
	}
	zero := time.Duration(0)
	args, _ = managerArgs(managerRole{cell: true, kubeconfig: "/k", providerDelay: &zero}, flags, "/h", ports)
	if !slices.Contains(args, "--simulated-provider-delay=0s") {
		t.Errorf("a zero delay is not passed: %v", args)
	}
	args, _ = managerArgs(managerRole{kubeconfig: "/k", providerDelay: &zero}, parseManagerFlags("--enable-management-controllers --kubeconfig --simulated-provider-delay"), "/h", ports)
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--simulated-provider-delay") }) {
		t.Errorf("the management role gets the provider delay: %v", args)
	}
}

func TestANegativeProviderDelayIsRefused(t *testing.T) {
	d := -time.Second
	_, err := Config{StateDir: t.TempDir(), ProviderDelay: &d}.complete()
	if err == nil || !strings.Contains(err.Error(), "simulated provider delay") {
		t.Fatalf("complete() = %v, want an error about the provider delay", err)
	}
}

func TestFeatureGatesReachEveryManagerAndNetworkingRunsTheStandIn(t *testing.T) {
	flags := parseManagerFlags("--enable-cell-controllers --enable-management-controllers --enable-simulated-provider --kubeconfig --feature-gates --enable-simulated-networking --simulated-network-cidr")
	ports := managerPorts{metrics: 7001, probe: 7002}
	gates := "NetworkingIntegration=true"
	cell, _ := managerArgs(managerRole{cell: true, kubeconfig: "/k", featureGates: gates, networkPool: networkPool(1)}, flags, "/h", ports)
	for _, want := range []string{"--feature-gates=" + gates, "--enable-simulated-networking=true", "--simulated-network-cidr=10.101.0.0/16"} {
		if !slices.Contains(cell, want) {
			t.Errorf("the cell role lacks %s: %v", want, cell)
		}
	}
	mgmt, _ := managerArgs(managerRole{kubeconfig: "/k", featureGates: gates}, flags, "/h", ports)
	if !slices.Contains(mgmt, "--feature-gates="+gates) {
		t.Errorf("the management role lacks the feature gates: %v", mgmt)
	}
	plain, _ := managerArgs(managerRole{cell: true, kubeconfig: "/k"}, flags, "/h", ports)
	if slices.ContainsFunc(plain, func(a string) bool {
		return strings.HasPrefix(a, "--feature-gates") || strings.HasPrefix(a, "--enable-simulated-networking")
	}) {
		t.Errorf("without gates the cell gets gate or networking flags: %v", plain)
	}
}

func TestFeatureGatesAreCheckedAndRead(t *testing.T) {
	if _, err := (Config{StateDir: t.TempDir(), FeatureGates: "NoSuchGate=true"}).complete(); err == nil || !strings.Contains(err.Error(), "NoSuchGate") {
		t.Fatalf("complete() = %v, want an error naming the unknown gate", err)
	}
	on := Config{FeatureGates: "NetworkingIntegration=true"}
	if !on.networkingIntegration() || (Config{}).networkingIntegration() || (Config{FeatureGates: "NetworkingIntegration=false"}).networkingIntegration() {
		t.Fatal("networkingIntegration() does not follow the NetworkingIntegration gate")
	}
	if networkPool(0) == networkPool(1) {
		t.Fatal("two cities share an address pool")
	}
}

func TestReplicatedProcessesElectALeaderInTheManifestsNamespace(t *testing.T) {
	flags := parseManagerFlags("--enable-cell-controllers --enable-management-controllers --kubeconfig --leader-elect --leader-election-namespace --leader-election-id")
	ports := managerPorts{metrics: 7001, probe: 7002}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"a single management role does not elect": {
			args: must(managerArgs(managerRole{kubeconfig: "/k"}, flags, "/h", ports)),
			want: []string{"--leader-elect=false"},
		},
		"a replicated management role elects in compute-system": {
			args: must(managerArgs(managerRole{kubeconfig: "/k", leaderElect: true}, flags, "/h", ports)),
			want: []string{"--leader-elect=true", "--leader-election-namespace=compute-system"},
		},
		"a replicated cell role elects in compute-system": {
			args: must(managerArgs(managerRole{cell: true, kubeconfig: "/k", leaderElect: true}, flags, "/h", ports)),
			want: []string{"--leader-elect=true", "--leader-election-namespace=compute-system"},
		},
		"a replicated compute-quota elects in compute-system": {
			args: quotaArgs("default", "/k", QuotaGrant{}, ports, true),
			want: []string{"--leader-elect=true", "--leader-election-namespace=compute-system"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, w := range tc.want {
				if !slices.Contains(tc.args, w) {
					t.Errorf("%s is not passed: %v", w, tc.args)
				}
			}
			// The Lease keeps the binaries' default name, as the manifests do.
			if slices.ContainsFunc(tc.args, func(a string) bool { return strings.HasPrefix(a, "--leader-election-id") }) {
				t.Errorf("a Lease name is passed: %v", tc.args)
			}
		})
	}
}

func TestReplicasAreNamedApartFromOtherPlanes(t *testing.T) {
	if got := replicaName("compute-manager-project-default", 0); got != "compute-manager-project-default" {
		t.Errorf("the first replica is %q, want the role's own name", got)
	}
	if got := replicaName("compute-manager-project-default", 1); got != "compute-manager-project-default.1" {
		t.Errorf("the second replica is %q", got)
	}
	for _, n := range []int{-1, MaxReplicas + 1} {
		if _, err := (Config{StateDir: t.TempDir(), Replicas: n}).complete(); err == nil {
			t.Errorf("%d replicas are accepted", n)
		}
	}
	c, err := Config{StateDir: t.TempDir()}.complete()
	if err != nil || c.Replicas != 1 || c.leaderElect() {
		t.Errorf("the default is %d replicas (leader election %v), %v; want 1 without election", c.Replicas, c.leaderElect(), err)
	}
}

func TestTheLeaderIsTheReplicaThatAcquiredTheLeaseSinceItStarted(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		log  string
		want bool
	}{
		"acquired":                 {"=== start\nI1 \"Attempting to acquire leader lease...\"\nI2 \"Successfully acquired lease\" lock=\"compute-system/x\"\n", true},
		"waiting":                  {"=== start\nI1 attempting to acquire leader lease compute-system/x...\n", false},
		"acquired, then restarted": {"=== start\nI2 successfully acquired lease compute-system/x\n=== again\nI3 attempting to acquire leader lease\n", false},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".log")
			if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := leads(ComponentRecord{Log: path}); got != tc.want {
				t.Errorf("leads() = %v, want %v", got, tc.want)
			}
		})
	}
}

// must returns args, failing nothing: managerArgs' second result is
// checked by the tests of the roles.
func must(args []string, _ bool) []string { return args }
