package manager

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/citycells/compute/internal/controller/nsgrant"
)

// TestTheDebugRelayIsBoundWithTheKubernetesProviderOnly: the cell binds
// the relay (its default user, today's) only where the Kubernetes provider
// runs Pods, and not at all with --debug-relay-user="". A manager that
// binds nothing is never asked for (nil here).
func TestTheDebugRelayIsBoundWithTheKubernetesProviderOnly(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("compute-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.DebugRelayUser != nsgrant.DebugRelayUser {
		t.Errorf("--%s defaults to %q, want %q", DebugRelayUserFlag, o.DebugRelayUser, nsgrant.DebugRelayUser)
	}
	for name, o := range map[string]*Options{
		"no provider":                       {DebugRelayUser: nsgrant.DebugRelayUser},
		"the simulated provider":            {RuntimeProvider: RuntimeProviderSimulated, DebugRelayUser: nsgrant.DebugRelayUser},
		"the Kubernetes one, no relay user": {RuntimeProvider: RuntimeProviderKubernetes},
	} {
		t.Run(name, func(t *testing.T) {
			if err := o.setupDebugRelay(nil); err != nil {
				t.Errorf("setupDebugRelay: %v", err)
			}
		})
	}
}
