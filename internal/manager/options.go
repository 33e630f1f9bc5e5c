// Package manager holds compute-manager's configuration: its flags, the
// checks that make a role switched on without what it needs fail loudly at
// start, and the wiring of the roles into controller managers.
package manager

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-base/featuregate"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/nsgrant"
	"github.com/citycells/compute/internal/features"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/internal/serving"
	"github.com/citycells/compute/internal/standin/simnetwork"
)

// CellCityCodeFlag names the city code the cell serves.
const CellCityCodeFlag = "cell-city-code"

// RuntimeProviderFlag selects the runtime provider the cell runs.
const RuntimeProviderFlag = "runtime-provider"

// RuntimeAllocationRatioFlag sets the Kubernetes provider's allocation
// ratio.
const RuntimeAllocationRatioFlag = "runtime-allocation-ratio"

// NetworkPolicyEnforcementFlag says whether the cell enforces the
// Kubernetes provider's NetworkPolicies.
const NetworkPolicyEnforcementFlag = "network-policy-enforcement"

// DebugRelayUserFlag names the debug API relay's user in the cell.
const DebugRelayUserFlag = "debug-relay-user"

// simulatedProviderFlag is the deprecated alias of
// --runtime-provider=simulated.
const simulatedProviderFlag = "enable-simulated-provider"

// Runtime providers (--runtime-provider).
const (
	// RuntimeProviderNone runs no runtime provider: another process runs
	// the cell's Instances.
	RuntimeProviderNone = ""
	// RuntimeProviderSimulated runs the simulated provider (local platform
	// and tests).
	RuntimeProviderSimulated = "simulated"
	// RuntimeProviderKubernetes runs each Instance as a Pod in the cell
	// (internal/provider/kubernetes).
	RuntimeProviderKubernetes = "kubernetes"
)

// runtimeProviders are the values --runtime-provider accepts, for messages.
var runtimeProviders = []string{RuntimeProviderSimulated, RuntimeProviderKubernetes}

// Options is compute-manager's configuration.
type Options struct {
	// EnableManagement runs the management role: Workload, federator,
	// projector and webhooks against project planes.
	EnableManagement bool
	// EnableCell runs the cell role: WorkloadDeployment and Instance
	// controllers in a cell.
	EnableCell bool
	// RuntimeProvider is the runtime provider the cell runs:
	// RuntimeProviderSimulated, RuntimeProviderKubernetes or
	// RuntimeProviderNone.
	RuntimeProvider string
	// RuntimeAllocationRatio is the Kubernetes provider's allocation
	// ratio: a Pod requests its instance's size divided by it (its limits
	// are the size); 1 (or zero) makes requests equal limits.
	RuntimeAllocationRatio float64
	// NetworkPolicyEnforcement says whether the cell's network enforces
	// the NetworkPolicies the Kubernetes provider writes: "none" (the
	// default) or "enforced".
	NetworkPolicyEnforcement string
	// DebugRelayUser is, with the Kubernetes provider, the user the debug
	// API's relay is in the cell (Karmada's cluster proxy impersonates
	// it): the cell binds ClusterRole compute-debug-relay to it in every
	// federation namespace. Empty binds nothing.
	DebugRelayUser string
	// EnableSimulatedProvider runs the simulated runtime provider in the cell
	// (local platform and tests only).
	//
	// Deprecated: set RuntimeProvider to RuntimeProviderSimulated; true
	// means that when RuntimeProvider is empty.
	EnableSimulatedProvider bool

	// Kubeconfig is the plane the manager's own controllers run against: the
	// cell for the cell role, the project plane in single mode. Empty means
	// $KUBECONFIG or in-cluster.
	Kubeconfig string
	// FederationKubeconfig is the federation plane (the Karmada apiserver).
	// The management role requires it (it copies WorkloadDeployments there
	// and projects Instances back); the cell role writes its Instances back
	// through it, and runs without write-back when it is empty.
	FederationKubeconfig string

	// MetricsAddr is where Prometheus metrics are served ("0" disables).
	MetricsAddr string
	// ProbeAddr is where /healthz and /readyz are served.
	ProbeAddr string
	// PprofAddr is where Go's pprof endpoints (/debug/pprof/) are served;
	// empty or "0" serves none.
	PprofAddr string
	// LeaderElect enables leader election.
	LeaderElect bool
	// LeaderElectionNamespace holds the leader election lease.
	LeaderElectionNamespace string
	// LeaderElectionID names the lease; defaults per role.
	LeaderElectionID string

	// CellLocation is the Location (networking.datumapis.com) the cell
	// serves, as namespace/name: the cell records it on its Instances
	// (spec.location) and WorkloadDeployments (status.location). Empty
	// leaves both unset.
	CellLocation string
	// CellCityCode is the city code the cell serves (its
	// WorkloadDeployments' spec.cityCode). When set, the cell's cache of
	// the federation plane holds only that city's WorkloadDeployments and
	// Instances instead of every city's; empty caches them all.
	CellCityCode string

	// SimulatedProviderDelay is how long the simulated provider waits before
	// an instance becomes available.
	SimulatedProviderDelay time.Duration
	// SimulatedProviderCIDR is the range the simulated provider assigns
	// network addresses from.
	SimulatedProviderCIDR string

	// EnableSimulatedNetworking runs the networking stand-in in the cell.
	EnableSimulatedNetworking bool
	// SimulatedNetworkCIDR is the city's address pool of the networking
	// stand-in.
	SimulatedNetworkCIDR string
	// SimulatedNetworkSubnetPrefix is the prefix length of each network's
	// subnet in the city.
	SimulatedNetworkSubnetPrefix int

	// Management configures the management role (project discovery,
	// webhooks).
	Management management.Options

	// Quota configures the cell role's quota claims (quota.go).
	Quota QuotaOptions
	// Client sets the client-side rate limits (client.go).
	Client ClientOptions
	// Serving secures the metrics and webhook servers (serving.go).
	Serving serving.Options

	// FeatureGates are compute's feature gates.
	FeatureGates featuregate.MutableFeatureGate

	featureGatesFlagSet bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		MetricsAddr:                  ":8080",
		ProbeAddr:                    ":8081",
		RuntimeAllocationRatio:       1,
		NetworkPolicyEnforcement:     string(kubernetes.EnforcementNone),
		DebugRelayUser:               nsgrant.DebugRelayUser,
		SimulatedProviderDelay:       2 * time.Second,
		SimulatedProviderCIDR:        "10.128.0.0/16",
		SimulatedNetworkCIDR:         simnetwork.DefaultCIDR,
		SimulatedNetworkSubnetPrefix: simnetwork.DefaultSubnetPrefixLength,
		Client:                       NewClientOptions(),
		Serving:                      serving.NewOptions(),
		FeatureGates:                 features.New(),
		Management:                   management.NewOptions(),
	}
}

// AddFlags binds the options to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnableManagement, "enable-management-controllers", o.EnableManagement,
		"Run the management role: Workload, federation and projection controllers and the admission webhooks.")
	fs.BoolVar(&o.EnableCell, "enable-cell-controllers", o.EnableCell,
		"Run the cell role: WorkloadDeployment and Instance controllers in a city cell.")
	fs.StringVar(&o.RuntimeProvider, RuntimeProviderFlag, o.RuntimeProvider,
		`Runtime provider that runs the cell's Instances: "kubernetes" runs each as a Pod in the cell (needs a scheduler, nodes and a CNI there), "simulated" pretends to (local platform and tests); empty runs none.`)
	fs.Float64Var(&o.RuntimeAllocationRatio, RuntimeAllocationRatioFlag, o.RuntimeAllocationRatio,
		"With --runtime-provider=kubernetes: a Pod's limits are its instance type's size and its requests that divided by this ratio (at least 1), so the nodes take ratio times more instances. 1 makes Guaranteed Pods: every instance gets what its type says.")
	fs.StringVar(&o.NetworkPolicyEnforcement, NetworkPolicyEnforcementFlag, o.NetworkPolicyEnforcement,
		`With --runtime-provider=kubernetes: whether this cell's network enforces Kubernetes NetworkPolicy (a CNI or policy agent that does). The provider writes each Instance's ingress policy as a NetworkPolicy either way; with "none" an Instance that declares a policy reports Programmed=False, reason NetworkPolicyNotEnforced (it still runs). "enforced" says the cell enforces them. One of: none, enforced.`)
	fs.StringVar(&o.DebugRelayUser, DebugRelayUserFlag, o.DebugRelayUser,
		"With --runtime-provider=kubernetes: the user the debug API's relay is in this cell (Karmada's cluster proxy impersonates the management role's hub identity). The cell binds ClusterRole compute-debug-relay (Pods' log and exec) to it in every federation namespace, and nowhere else; the admission policy compute-debug-relay-bindings must name the same user (its variable relayUser). Empty binds nothing: no logs or exec in this cell.")
	fs.BoolVar(&o.EnableSimulatedProvider, simulatedProviderFlag, o.EnableSimulatedProvider,
		"Deprecated: use --runtime-provider=simulated. Run the simulated runtime provider in the cell (local platform and tests).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Kubeconfig of the plane this manager runs in (the cell for the cell role). Defaults to $KUBECONFIG, then in-cluster.")
	fs.StringVar(&o.FederationKubeconfig, hub.KubeconfigFlag, o.FederationKubeconfig,
		"Kubeconfig of the federation plane (the Karmada apiserver). Required by the management role; the cell role writes its Instances back through it.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the Prometheus metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr,
		`Address of Go's profiling endpoints (/debug/pprof/: heap, goroutines, CPU), unauthenticated; empty or "0" (the default) serves none. Bind it to loopback (127.0.0.1:6060) and reach it with kubectl port-forward.`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader election lease (defaults to the in-cluster namespace).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election lease.")
	fs.StringVar(&o.CellLocation, "cell-location", o.CellLocation,
		"Location the cell serves, as namespace/name (e.g. datum-cloud/dfw); recorded on its Instances and WorkloadDeployments.")
	fs.StringVar(&o.CellCityCode, CellCityCodeFlag, o.CellCityCode,
		"City code the cell serves (its WorkloadDeployments' spec.cityCode, e.g. DFW). Set, the cell caches only that city's WorkloadDeployments and Instances of the federation plane instead of every city's (memory grows with the city, not the federation); an Instance of another city is then not written back. Empty caches every city's.")
	fs.DurationVar(&o.SimulatedProviderDelay, "simulated-provider-delay", o.SimulatedProviderDelay,
		"How long the simulated provider takes to make an instance available.")
	fs.StringVar(&o.SimulatedProviderCIDR, "simulated-provider-cidr", o.SimulatedProviderCIDR,
		"Range the simulated provider assigns instance network addresses from (not used with the NetworkingIntegration gate on: the networks assign them).")
	fs.BoolVar(&o.EnableSimulatedNetworking, "enable-simulated-networking", o.EnableSimulatedNetworking,
		"Run the networking stand-in in the cell (local platform and tests): it attaches the cell's NetworkBindings and assigns their addresses. Needs the networking.datumapis.com CRDs.")
	fs.StringVar(&o.SimulatedNetworkCIDR, "simulated-network-cidr", o.SimulatedNetworkCIDR,
		"The city's IPv4 address pool the networking stand-in cuts each network's subnet from.")
	fs.IntVar(&o.SimulatedNetworkSubnetPrefix, "simulated-network-subnet-prefix", o.SimulatedNetworkSubnetPrefix,
		"Prefix length of each network's subnet in the city (a /29 holds 5 addresses: use it to see a network run out).")
	o.Management.AddFlags(fs)
	o.Quota.AddFlags(fs)
	o.Client.AddFlags(fs)
	o.Serving.AddFlags(fs)
	// Registers --feature-gates with the list of known gates; $FEATURE_GATES is
	// read in Complete when the flag is not given.
	o.FeatureGates.AddFlag(fs)
}

// Complete fills what the flags left to the environment.
func (o *Options) Complete(fs *pflag.FlagSet) error {
	o.featureGatesFlagSet = fs.Changed("feature-gates")
	return features.ApplyEnv(o.FeatureGates, o.featureGatesFlagSet)
}

// Validate reports every configuration error at once, each naming the flag to
// fix.
func (o *Options) Validate() error {
	errs := slices.Concat(o.validateRuntime(), o.validateManagement(), o.validateCell())
	if err := o.Client.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig %q cannot be read: %w", o.Kubeconfig, err))
		}
	}
	return errors.Join(errs...)
}

// validateRuntime checks the runtime flags: the provider, that some role
// runs, the simulated network and provider, the allocation ratio.
func (o *Options) validateRuntime() []error {
	var errs []error
	if err := o.validateRuntimeProvider(); err != nil {
		errs = append(errs, err)
	}
	if !o.EnableManagement && !o.EnableCell && o.runtimeProvider() == RuntimeProviderNone {
		errs = append(errs, errors.New("no role is enabled: pass --enable-management-controllers and/or --enable-cell-controllers"))
	}
	if o.EnableSimulatedNetworking {
		if err := simnetwork.ValidatePool(o.SimulatedNetworkCIDR, o.SimulatedNetworkSubnetPrefix); err != nil {
			errs = append(errs, fmt.Errorf("--simulated-network-cidr/--simulated-network-subnet-prefix: %w", err))
		}
	}
	if r := o.RuntimeAllocationRatio; r != 0 && !(r >= 1) || math.IsInf(r, 0) {
		errs = append(errs, fmt.Errorf("--%s must be a number of at least 1, got %g", RuntimeAllocationRatioFlag, r))
	}
	if m := o.NetworkPolicyEnforcement; !slices.Contains(kubernetes.NetworkPolicyEnforcements, m) {
		errs = append(errs, fmt.Errorf("--%s must be one of %s, got %q", NetworkPolicyEnforcementFlag, strings.Join(kubernetes.NetworkPolicyEnforcements, ", "), m))
	}
	if o.runtimeProvider() == RuntimeProviderSimulated && o.SimulatedProviderDelay < 0 {
		errs = append(errs, fmt.Errorf("--simulated-provider-delay must not be negative, got %s", o.SimulatedProviderDelay))
	}
	return errs
}

// validateManagement checks the management role's flags and the federation
// plane's kubeconfig.
func (o *Options) validateManagement() []error {
	var errs []error
	if o.EnableManagement {
		if err := o.Management.Validate(); err != nil {
			errs = append(errs, err)
		}
		if o.FederationKubeconfig == "" {
			errs = append(errs, fmt.Errorf("--%s is required with --enable-management-controllers: "+
				"the management role copies WorkloadDeployments to the federation plane (Karmada) and projects Instances back from it",
				hub.KubeconfigFlag))
		}
	}
	if o.FederationKubeconfig != "" {
		if _, err := os.Stat(o.FederationKubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--%s %q cannot be read: %w", hub.KubeconfigFlag, o.FederationKubeconfig, err))
		}
	}
	return errs
}

// validateCell checks the cell's flags: its Location, city code and name,
// and its quota.
func (o *Options) validateCell() []error {
	var errs []error
	if _, err := o.cellLocation(); err != nil {
		errs = append(errs, err)
	}
	if c := o.CellCityCode; c != "" {
		if msgs := validation.IsValidLabelValue(c); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q is not a valid city code: %s", CellCityCodeFlag, c, strings.Join(msgs, "; ")))
		}
	}
	if name := o.Quota.CellName; name != "" {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q is not a valid name: %s", CellNameFlag, name, strings.Join(msgs, "; ")))
		}
	}
	if err := o.Quota.Validate(o.EnableCell); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// runtimeProvider returns the runtime provider to run: --runtime-provider,
// else the simulated one when the deprecated --enable-simulated-provider
// asks for it.
func (o *Options) runtimeProvider() string {
	if o.RuntimeProvider == RuntimeProviderNone && o.EnableSimulatedProvider {
		return RuntimeProviderSimulated
	}
	return o.RuntimeProvider
}

// validateRuntimeProvider checks --runtime-provider and that the
// deprecated --enable-simulated-provider does not contradict it.
func (o *Options) validateRuntimeProvider() error {
	if o.RuntimeProvider != RuntimeProviderNone && !slices.Contains(runtimeProviders, o.RuntimeProvider) {
		return fmt.Errorf("--%s %q is not a runtime provider: use %s, or leave it empty to run none",
			RuntimeProviderFlag, o.RuntimeProvider, strings.Join(runtimeProviders, " or "))
	}
	if o.EnableSimulatedProvider && o.RuntimeProvider != RuntimeProviderNone && o.RuntimeProvider != RuntimeProviderSimulated {
		return fmt.Errorf("--%s (deprecated: it means --%s=%s) contradicts --%s=%s: pass --%s alone",
			simulatedProviderFlag, RuntimeProviderFlag, RuntimeProviderSimulated, RuntimeProviderFlag, o.RuntimeProvider, RuntimeProviderFlag)
	}
	return nil
}

// cellLocation parses --cell-location; nil when it is empty.
func (o *Options) cellLocation() (*computev1alpha.LocationReference, error) {
	if o.CellLocation == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(o.CellLocation, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--cell-location must be namespace/name, e.g. datum-cloud/dfw; got %q", o.CellLocation)
	}
	for _, msg := range validation.IsDNS1123Label(ns) {
		return nil, fmt.Errorf("--cell-location namespace %q: %s", ns, msg)
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		return nil, fmt.Errorf("--cell-location name %q: %s", name, msg)
	}
	return &computev1alpha.LocationReference{Namespace: ns, Name: name}, nil
}
