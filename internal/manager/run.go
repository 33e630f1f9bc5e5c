package manager

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/controller/podevents"
	"github.com/citycells/compute/internal/features"
	"github.com/citycells/compute/internal/manager/cell"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/manager/management"
	"github.com/citycells/compute/internal/probes"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/internal/serving"
)

// Run starts the enabled roles and blocks until ctx ends or a role fails.
// When both roles are enabled (single-cluster mode) they share one manager:
// the cell controllers run on the management role's own cluster.
func Run(ctx context.Context, o *Options) error {
	cfg, hubCfg, err := o.loadConfigs()
	if err != nil {
		return err
	}
	mgrOpts, err := o.managerOptions()
	if err != nil {
		return err
	}
	mgr, start, err := o.newManager(cfg, hubCfg, mgrOpts)
	if err != nil {
		return err
	}
	cellOpts, err := o.cellOptions(mgr, hubCfg)
	if err != nil {
		return err
	}
	if err := cell.Setup(mgr, cellOpts); err != nil {
		return err
	}
	if err := o.setupCellGrants(mgr); err != nil {
		return err
	}
	if err := probes.Add(mgr); err != nil {
		return err
	}
	ctrl.Log.WithName("compute-manager").Info("starting",
		"management", o.EnableManagement, "cell", o.EnableCell, "runtimeProvider", o.runtimeProvider(),
		"simulatedNetworking", o.EnableSimulatedNetworking, "networkingIntegration", o.networkingIntegration(),
		"host", cfg.Host, "federation", hubHost(hubCfg))
	return start(ctx)
}

// loadConfigs reads the client configurations of the manager's own cluster
// and, when --federation-kubeconfig is set, of the federation plane (nil
// otherwise), with the client flags applied to both.
func (o *Options) loadConfigs() (cfg, hubCfg *rest.Config, err error) {
	if cfg, err = serving.LoadConfig(o.Kubeconfig); err != nil {
		return nil, nil, err
	}
	o.Client.apply(cfg)
	if o.FederationKubeconfig == "" {
		return cfg, nil, nil
	}
	if hubCfg, err = hub.LoadConfig(o.FederationKubeconfig); err != nil {
		return nil, nil, err
	}
	o.Client.applyFederation(hubCfg)
	return cfg, hubCfg, nil
}

// managerOptions are the controller-runtime options of the one manager
// both roles share.
func (o *Options) managerOptions() (ctrl.Options, error) {
	mgrOpts := ctrl.Options{
		Scheme:                 management.NewScheme(),
		Metrics:                o.Serving.Metrics(o.MetricsAddr),
		HealthProbeBindAddress: o.ProbeAddr,
		PprofBindAddress:       o.PprofAddr,
		// No controller reads managedFields: the caches keep objects
		// without them (a third or more of an Instance's size), which
		// saves memory and the cost of every deep copy of a cached
		// object.
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		LeaderElection:          o.LeaderElect,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaderElectionID:        o.leaderElectionID(),
	}
	if err := addQuotaTypes(mgrOpts.Scheme); err != nil {
		return ctrl.Options{}, err
	}
	if o.runtimeProvider() == RuntimeProviderKubernetes {
		// The provider watches its own Pods only, never every Pod of the
		// cell.
		mgrOpts.Cache.ByObject = map[client.Object]cache.ByObject{}
		maps.Copy(mgrOpts.Cache.ByObject, kubernetes.CacheByObject())
		// Its Pods' events, for the event forwarder.
		maps.Copy(mgrOpts.Cache.ByObject, podevents.CacheByObject())
	}
	return mgrOpts, nil
}

// newManager creates the manager the roles share and the function that
// starts it: the management role's (which also builds the webhook
// server) when that role is enabled, a plain one for a cell alone.
func (o *Options) newManager(cfg, hubCfg *rest.Config, mgrOpts ctrl.Options) (ctrl.Manager, func(context.Context) error, error) {
	if !o.EnableManagement {
		mgr, err := ctrl.NewManager(cfg, mgrOpts)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to create the manager: %w", err)
		}
		return mgr, mgr.Start, nil
	}
	mo := o.Management
	mo.Manager = mgrOpts
	mo.Federation = hubCfg
	// Without a federation plane the cell controllers run on the project
	// plane itself: the companions of referenced data go next to their
	// sources.
	mo.LocalCompanions = hubCfg == nil && o.EnableCell
	mo.Webhook.TLSOpts = o.Serving.TLSOpts()
	role, err := management.Setup(cfg, mo)
	if err != nil {
		return nil, nil, err
	}
	return role.Manager().GetLocalManager(), role.Start, nil
}

// cellOptions say which parts of the cell run: the controllers and the
// write-back with --enable-cell-controllers (the write-back when the
// federation plane is known), the runtime provider and the networking
// stand-in when their flags ask for them.
func (o *Options) cellOptions(mgr ctrl.Manager, hubCfg *rest.Config) (cell.Options, error) {
	location, err := o.cellLocation()
	if err != nil {
		return cell.Options{}, err
	}
	opts := cell.Options{
		Provider:              o.cellProvider(),
		NetworkingIntegration: o.networkingIntegration(),
		Location:              location,
	}
	if o.EnableSimulatedNetworking {
		opts.Networking = &cell.NetOptions{CIDR: o.SimulatedNetworkCIDR, SubnetPrefixLength: o.SimulatedNetworkSubnetPrefix}
	}
	if !o.EnableCell {
		return opts, nil
	}
	quotaClient, err := o.Quota.quotaClient(mgr)
	if err != nil {
		return cell.Options{}, err
	}
	opts.Controllers = &cell.ControllerOptions{Quota: quotaClient}
	if hubCfg == nil {
		ctrl.Log.WithName("compute-manager").Info("Instance write-back is off: --" + hub.KubeconfigFlag +
			" is not set, so this cell's Instances are not projected into their projects")
		return opts, nil
	}
	opts.WriteBack = &cell.WriteBackOptions{Config: hubCfg, CellName: o.Quota.CellName, City: o.CellCityCode}
	return opts, nil
}

// cellProvider is the runtime provider --runtime-provider names; nil for
// none.
func (o *Options) cellProvider() cell.Provider {
	switch o.runtimeProvider() {
	case RuntimeProviderSimulated:
		return cell.SimulatedProvider{Delay: o.SimulatedProviderDelay, CIDR: o.SimulatedProviderCIDR}
	case RuntimeProviderKubernetes:
		return cell.KubernetesProvider{AllocationRatio: o.RuntimeAllocationRatio,
			NetworkPolicyEnforcement: kubernetes.NetworkPolicyEnforcement(o.NetworkPolicyEnforcement)}
	}
	return nil
}

// setupCellGrants, when the Kubernetes provider runs the cell's Pods,
// binds the provider's own per-namespace role in the cell's federation
// namespaces, and the debug API's relay's when --debug-relay-user names
// the relay.
func (o *Options) setupCellGrants(mgr ctrl.Manager) error {
	if o.runtimeProvider() != RuntimeProviderKubernetes {
		return nil
	}
	if err := cell.SetupProviderGrant(mgr); err != nil {
		return err
	}
	if o.DebugRelayUser == "" {
		return nil
	}
	return cell.SetupDebugRelay(mgr, cell.DebugRelayOptions{User: o.DebugRelayUser})
}

// networkingIntegration is the NetworkingIntegration feature gate.
func (o *Options) networkingIntegration() bool {
	return o.FeatureGates.Enabled(features.NetworkingIntegration)
}

// leaderElectionID names the lease after the roles so a cell manager and a
// management manager in one namespace never contend.
func (o *Options) leaderElectionID() string {
	if o.LeaderElectionID != "" {
		return o.LeaderElectionID
	}
	switch {
	case o.EnableManagement && o.EnableCell:
		return "compute-manager.compute.datumapis.com"
	case o.EnableManagement:
		return "compute-management.compute.datumapis.com"
	default:
		return "compute-cell.compute.datumapis.com"
	}
}

// hubHost is the federation plane's address for the start-up log.
func hubHost(cfg *rest.Config) string {
	if cfg == nil {
		return ""
	}
	return cfg.Host
}
