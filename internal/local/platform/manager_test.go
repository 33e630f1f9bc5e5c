package platform

import (
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
