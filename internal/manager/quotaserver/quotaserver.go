// Package quotaserver is compute-quota's configuration and wiring: its
// flags (Options with AddFlags, Complete and Validate, like
// compute-manager's), and Run, which starts the quota service of one
// project plane (internal/standin/quotaservice) and, on the local
// platform, the service catalog's stand-in (internal/standin/entitlement).
package quotaserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/probes"
	"github.com/citycells/compute/internal/serving"
	"github.com/citycells/compute/internal/standin/entitlement"
	"github.com/citycells/compute/internal/standin/quotaservice"
)

// Options is compute-quota's configuration.
type Options struct {
	// Kubeconfig is the project's quota plane; empty means $KUBECONFIG,
	// then in-cluster.
	Kubeconfig string
	// Service is the quota service's own configuration, its fields bound
	// to their flags (the project, the grant and bucket namespaces, the
	// hold grace, ...); Complete adds the default grant the Default*
	// flags size.
	Service quotaservice.Options
	// DefaultGrant creates the project's default grant when it is missing.
	DefaultGrant bool
	// DefaultInstances, DefaultVCPUs and DefaultMemory size the default
	// grant.
	DefaultInstances int64
	// DefaultVCPUs is a quantity of vCPU ("40", "500m").
	DefaultVCPUs string
	// DefaultMemory is a quantity of memory ("80Gi").
	DefaultMemory string
	// MetricsAddr and ProbeAddr are where metrics and probes are served.
	MetricsAddr string
	// ProbeAddr is where /healthz and /readyz are served.
	ProbeAddr string
	// LeaderElect, LeaderElectionNamespace and LeaderElectionID configure
	// leader election.
	LeaderElect bool
	// LeaderElectionNamespace holds the lease; BucketNamespace when empty.
	LeaderElectionNamespace string
	// LeaderElectionID names the lease.
	LeaderElectionID string
	// QPS and Burst limit the client of the quota plane.
	QPS float32
	// Burst is the client's burst.
	Burst int
	// ActivateEntitlements also plays the service catalog (local platform).
	ActivateEntitlements bool
	// Serving secures the metrics endpoint and turns HTTP/2 off.
	Serving serving.Options

	// changed lists the flags given on the command line.
	changed map[string]bool
}

// Defaults of compute-quota's client limits to the quota plane. Every
// claim costs one status write and every evaluation pass one write per
// bucket it changes, so the write rate bounds how fast a burst of Instances
// is granted. At 100 QPS a burst of 1,000 claims wrote at the limit (about
// 90 writes/s, granted in 15.7 s, test/bench/cell); at 500 the same burst
// on 2 cores is bound by the apiservers' CPU instead (95 writes/s, 14.6 s),
// so 500 leaves a faster quota plane room without letting the client be
// the bound. API Priority and Fairness still protects the server; lower it
// for a quota API that accepts less (--kube-api-qps). Milo's quota API was
// not measured.
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		DefaultGrant:     true,
		DefaultInstances: 10,
		DefaultVCPUs:     "40",
		DefaultMemory:    "80Gi",
		Service: quotaservice.Options{
			GrantName:              quotaservice.DefaultGrantName,
			GrantNamespace:         quotaservice.DefaultGrantNamespace,
			BucketNamespace:        quotaservice.DefaultBucketNamespace,
			HoldGrace:              quotaservice.DefaultHoldGrace,
			MaxConcurrentConsumers: quotaservice.DefaultMaxConcurrentConsumers,
			MaxClaimsPerSource:     quotaservice.DefaultMaxClaimsPerSource,
		},
		MetricsAddr:      "0",
		ProbeAddr:        "0",
		LeaderElectionID: "compute-quota",
		QPS:              DefaultKubeAPIQPS,
		Burst:            DefaultKubeAPIBurst,
		Serving:          serving.NewOptions(),
	}
}

// grantFlags only mean something with --project: they shape the project's
// default grant.
var grantFlags = []string{"default-grant", "default-instances", "default-vcpus", "default-memory", "default-grant-name"}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the project's quota plane. Defaults to $KUBECONFIG, then in-cluster.")
	fs.StringVar(&o.Service.Project, "project", o.Service.Project, "Project this plane belongs to; its default grant is made out to resourcemanager.miloapis.com/Project <project>.")
	fs.BoolVar(&o.DefaultGrant, "default-grant", o.DefaultGrant, "Create the project's default ResourceGrant when it is missing (needs --project).")
	fs.Int64Var(&o.DefaultInstances, "default-instances", o.DefaultInstances, "Instances in the default grant (needs --project).")
	fs.StringVar(&o.DefaultVCPUs, "default-vcpus", o.DefaultVCPUs, `vCPU in the default grant, as a quantity ("40", "500m"; needs --project).`)
	fs.StringVar(&o.DefaultMemory, "default-memory", o.DefaultMemory, `Memory in the default grant, as a quantity ("80Gi"; needs --project).`)
	fs.StringVar(&o.Service.GrantName, "default-grant-name", o.Service.GrantName, "Name of the default grant (needs --project).")
	fs.StringVar(&o.Service.GrantNamespace, "grant-namespace", o.Service.GrantNamespace, "Namespace of the default grant (the claim namespace); created if missing.")
	fs.StringVar(&o.Service.BucketNamespace, "bucket-namespace", o.Service.BucketNamespace, "Namespace of the AllowanceBuckets; created if missing.")
	fs.BoolVar(&o.Service.SkipRegistrations, "skip-registrations", o.Service.SkipRegistrations, "Do not create the compute ResourceRegistrations.")
	fs.DurationVar(&o.Service.HoldGrace, "hold-grace", o.Service.HoldGrace,
		"How long bucket allocations no granted claim explains are held before they are released.")
	fs.IntVar(&o.Service.MaxConcurrentConsumers, "max-concurrent-consumers", o.Service.MaxConcurrentConsumers, "Consumers evaluated in parallel.")
	fs.IntVar(&o.Service.MaxClaimsPerSource, "max-claims-per-source", o.Service.MaxClaimsPerSource,
		"ResourceClaims one cell (the claims labelled "+computev1alpha.SourceClusterLabel+" with its name) may have outstanding in the plane; later ones are refused until earlier ones are released.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the Prometheus metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, `Address of the /healthz and /readyz endpoints; "0" disables them.`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so only one replica evaluates claims.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election lease (defaults to --bucket-namespace).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election lease.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the quota plane; a burst of claims needs one status write each.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the quota plane.")
	fs.BoolVar(&o.ActivateEntitlements, "activate-entitlements", o.ActivateEntitlements,
		"Also play the service catalog: mark requested compute ServiceEntitlements Active (local platform only).")
	o.Serving.AddFlags(fs)
}

// Complete records which flags were given and adds to the quota service's
// configuration the default grant the Default* flags size.
func (o *Options) Complete(fs *pflag.FlagSet) error {
	o.changed = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.changed[f.Name] = true })
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Service.BucketNamespace
	}
	o.Service.DefaultGrant = nil
	if o.DefaultGrant && o.Service.Project != "" {
		g, err := quotaservice.ComputeGrant(o.DefaultInstances, o.DefaultVCPUs, o.DefaultMemory)
		if err != nil {
			return fmt.Errorf("--default-instances/--default-vcpus/--default-memory: %w", err)
		}
		o.Service.DefaultGrant = g
	}
	return nil
}

// Validate reports every configuration error at once, each naming its flag;
// a flag that would be ignored is an error, not a silent no-op.
func (o *Options) Validate() error {
	var errs []error
	if o.Service.Project == "" {
		for _, name := range grantFlags {
			if o.changed[name] {
				errs = append(errs, fmt.Errorf("--%s shapes the project's default grant and has no effect without --project: set --project, or drop --%s", name, name))
			}
		}
	}
	if !o.LeaderElect {
		for _, name := range []string{"leader-election-namespace", "leader-election-id"} {
			if o.changed[name] {
				errs = append(errs, fmt.Errorf("--%s has no effect without --leader-elect: add --leader-elect, or drop --%s", name, name))
			}
		}
	}
	if o.QPS <= 0 || o.Burst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %g and %d", o.QPS, o.Burst))
	}
	if o.Service.MaxClaimsPerSource == 0 {
		errs = append(errs, errors.New("--max-claims-per-source must be at least 1 (0 would refuse every cell's claim), got 0"))
	}
	if err := o.Service.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run starts the quota service and blocks until ctx ends.
func Run(ctx context.Context, o *Options) error {
	cfg, err := serving.LoadConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	mgr, err := quotaservice.NewManager(ctx, cfg, manager.Options{
		Metrics:                 o.Serving.Metrics(o.MetricsAddr),
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// No controller reads managedFields (a large part of every
		// claim, grant and bucket): the caches keep objects without them.
		// A status update of a cached bucket sends none, and the
		// apiserver then keeps the object's own.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	}, o.Service)
	if err != nil {
		return err
	}
	if o.ActivateEntitlements {
		if err := setupActivator(mgr); err != nil {
			return err
		}
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	ctrl.Log.WithName("compute-quota").Info("starting", "project", o.Service.Project, "host", cfg.Host)
	return mgr.Start(ctx)
}

// setupActivator runs the local platform's service catalog stand-in.
func setupActivator(mgr manager.Manager) error {
	if err := servicesv1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("failed to register the services API: %w", err)
	}
	if err := (&entitlement.Activator{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the entitlement activator: %w", err)
	}
	return nil
}

// addProbes serves /healthz and /readyz on --health-probe-bind-address
// (compute-local waits on /readyz): ready once the caches have synced.
func addProbes(mgr manager.Manager) error {
	return probes.Add(mgr)
}
