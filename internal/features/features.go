// Package features declares compute's feature gates. They are set with
// --feature-gates or the FEATURE_GATES environment variable
// ("Name=true,Other=false").
package features

import (
	"fmt"
	"os"

	"k8s.io/component-base/featuregate"
)

// EnvFeatureGates is read when --feature-gates is not given.
const EnvFeatureGates = "FEATURE_GATES"

const (
	// NetworkingIntegration binds every Instance's networks through
	// Datum's networking service (networking.datumapis.com): new Instances
	// get the Network scheduling gate, the cell creates a NetworkBinding per
	// interface, releases the gate once the bindings are Ready and records
	// their addresses in status.networkInterfaces; a refused binding makes
	// Ready=False NetworkUnavailable. Off by default (the runtime provider
	// assigns addresses); the local platform turns it on with
	// `compute-local up --feature-gates NetworkingIntegration=true`, and
	// runs a networking stand-in. Turning it off releases the Network gates
	// it left.
	NetworkingIntegration featuregate.Feature = "NetworkingIntegration"
)

var defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	NetworkingIntegration: {Default: false, PreRelease: featuregate.Alpha},
}

// New returns a mutable gate with compute's features registered.
func New() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(defaults); err != nil {
		// defaults is a constant table; Add fails only on programmer error.
		panic(fmt.Sprintf("features: %v", err))
	}
	return g
}

// ApplyEnv sets the gate from FEATURE_GATES unless the flag was given.
func ApplyEnv(g featuregate.MutableFeatureGate, flagSet bool) error {
	v, ok := os.LookupEnv(EnvFeatureGates)
	if flagSet || !ok || v == "" {
		return nil
	}
	if err := g.Set(v); err != nil {
		return fmt.Errorf("invalid %s=%q: %w", EnvFeatureGates, v, err)
	}
	return nil
}
