package manager

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/citycells/compute/internal/controller/nsgrant"
)

// TestTheDebugRelayIsBoundWithTheKubernetesProviderOnly: the cell binds
// the relay (its default user, today's) and the provider's own role only
// where the Kubernetes provider runs Pods. A manager that binds nothing is
// never asked for (nil here); with --debug-relay-user="" the provider's
// grant is still set up (test/integration/install runs both).
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
		"no provider":            {DebugRelayUser: nsgrant.DebugRelayUser},
		"the simulated provider": {RuntimeProvider: RuntimeProviderSimulated, DebugRelayUser: nsgrant.DebugRelayUser},
	} {
		t.Run(name, func(t *testing.T) {
			if err := o.setupCellGrants(nil); err != nil {
				t.Errorf("setupCellGrants: %v", err)
			}
		})
	}
}
