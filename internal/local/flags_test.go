package local

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProviderDelayFlag(t *testing.T) {
	var got *time.Duration
	f := durationPtr{&got}
	if f.String() != "" {
		t.Errorf("an unset delay prints %q, want empty", f.String())
	}
	if err := f.Set("0s"); err != nil || got == nil || *got != 0 {
		t.Fatalf("Set(0s) = %v, delay %v; want a zero delay that is set", err, got)
	}
	if err := f.Set("750ms"); err != nil || *got != 750*time.Millisecond || f.String() != "750ms" {
		t.Fatalf("Set(750ms) = %v, delay %v (%q)", err, *got, f.String())
	}
	for _, bad := range []string{"-1s", "soon", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) is accepted", bad)
		}
	}
}

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
