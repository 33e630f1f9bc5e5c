package manager

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

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
	cfg, err := serving.LoadConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.Client.apply(cfg)
	var hubCfg *rest.Config
	if o.FederationKubeconfig != "" {
		if hubCfg, err = hub.LoadConfig(o.FederationKubeconfig); err != nil {
			return err
		}
		o.Client.applyFederation(hubCfg)
	}
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
		return err
	}
	provider := o.runtimeProvider()
	if provider == RuntimeProviderKubernetes {
		// The provider watches its own Pods only, never every Pod of the
		// cell.
		if mgrOpts.Cache.ByObject == nil {
			mgrOpts.Cache.ByObject = map[client.Object]cache.ByObject{}
		}
		maps.Copy(mgrOpts.Cache.ByObject, kubernetes.CacheByObject())
	}

	var (
		mgr   ctrl.Manager
		start func(context.Context) error
	)
	if o.EnableManagement {
		mo := o.Management
		mo.Manager = mgrOpts
		mo.Federation = hubCfg
		if !mo.Webhook.Disabled {
			mo.Manager.WebhookServer = crwebhook.NewServer(crwebhook.Options{
				Host: mo.Webhook.Host, Port: mo.Webhook.Port, CertDir: mo.Webhook.CertDir, TLSOpts: o.Serving.TLSOpts(),
			})
		}
		role, err := management.Setup(cfg, mo)
		if err != nil {
			return err
		}
		mgr, start = role.Manager().GetLocalManager(), role.Start
	} else {
		m, err := ctrl.NewManager(cfg, mgrOpts)
		if err != nil {
			return fmt.Errorf("failed to create the manager: %w", err)
		}
		mgr, start = m, m.Start
	}

	networking := o.FeatureGates.Enabled(features.NetworkingIntegration)
	if o.EnableCell {
		quotaClient, err := o.Quota.quotaClient(mgr)
		if err != nil {
			return err
		}
		location, err := o.cellLocation()
		if err != nil {
			return err
		}
		if err := cell.Setup(mgr, cell.Options{
			NetworkingIntegration: networking,
			Quota:                 quotaClient,
			Location:              location,
		}); err != nil {
			return err
		}
		if hubCfg == nil {
			ctrl.Log.WithName("compute-manager").Info("Instance write-back is off: --" + hub.KubeconfigFlag +
				" is not set, so this cell's Instances are not projected into their projects")
		} else if err := cell.SetupWriteBack(mgr, hubCfg, cell.WriteBackOptions{CellName: o.Quota.CellName, City: o.CellCityCode}); err != nil {
			return err
		}
	}
	switch provider {
	case RuntimeProviderSimulated:
		if err := cell.SetupSimulatedProvider(mgr, cell.SimOptions{
			Delay:                o.SimulatedProviderDelay,
			CIDR:                 o.SimulatedProviderCIDR,
			AddressesFromNetwork: networking,
		}); err != nil {
			return err
		}
	case RuntimeProviderKubernetes:
		if err := cell.SetupKubernetesProvider(mgr, cell.KubeProviderOptions{
			AddressesFromNetwork: networking,
			AllocationRatio:      o.RuntimeAllocationRatio,
		}); err != nil {
			return err
		}
	}
	if o.EnableSimulatedNetworking {
		location, err := o.cellLocation()
		if err != nil {
			return err
		}
		if err := cell.SetupSimulatedNetworking(mgr, cell.NetOptions{
			CIDR:               o.SimulatedNetworkCIDR,
			SubnetPrefixLength: o.SimulatedNetworkSubnetPrefix,
			Location:           location,
		}); err != nil {
			return err
		}
	}
	if err := probes.Add(mgr); err != nil {
		return err
	}
	ctrl.Log.WithName("compute-manager").Info("starting",
		"management", o.EnableManagement, "cell", o.EnableCell, "runtimeProvider", provider,
		"simulatedNetworking", o.EnableSimulatedNetworking, "networkingIntegration", networking,
		"host", cfg.Host, "federation", hubHost(hubCfg))
	return start(ctx)
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
