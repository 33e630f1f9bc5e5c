// Command compute-quota is compute's quota service for the local platform
// and tests: it plays Milo's part against one project's quota plane,
// granting ResourceClaims against ResourceGrants through AllowanceBuckets
// without ever over-granting (see internal/controller/quotaservice). It creates the
// compute ResourceRegistrations and the project's default grant when they
// are missing. Run one per project plane.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	"github.com/citycells/compute/internal/controller/entitlement"
	"github.com/citycells/compute/internal/controller/quotaservice"
	"github.com/citycells/compute/internal/probes"
	"github.com/citycells/compute/internal/serving"
)

// flags are compute-quota's command line.
type flags struct {
	kubeconfig       string
	project          string
	defaultGrant     bool
	instances        int64
	vcpus            string
	memory           string
	grantName        string
	grantNamespace   string
	bucketNamespace  string
	skipRegistration bool
	holdGrace        time.Duration
	concurrency      int
	metricsAddr      string
	serving          serving.Options
	probeAddr        string
	leaderElect      bool
	leaderNamespace  string
	leaderID         string
	qps              float32
	burst            int
	activate         bool
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	f := flags{}
	fs := pflag.NewFlagSet("compute-quota", pflag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Kubeconfig of the project's quota plane. Defaults to $KUBECONFIG, then in-cluster.")
	fs.StringVar(&f.project, "project", "", "Project this plane belongs to; its default grant is made out to resourcemanager.miloapis.com/Project <project>.")
	fs.BoolVar(&f.defaultGrant, "default-grant", true, "Create the project's default ResourceGrant when it is missing (needs --project).")
	fs.Int64Var(&f.instances, "default-instances", 10, "Instances in the default grant.")
	fs.StringVar(&f.vcpus, "default-vcpus", "40", `vCPU in the default grant, as a quantity ("40", "500m").`)
	fs.StringVar(&f.memory, "default-memory", "80Gi", `Memory in the default grant, as a quantity ("80Gi").`)
	fs.StringVar(&f.grantName, "default-grant-name", quotaservice.DefaultGrantName, "Name of the default grant.")
	fs.StringVar(&f.grantNamespace, "grant-namespace", quotaservice.DefaultGrantNamespace, "Namespace of the default grant (the claim namespace); created if missing.")
	fs.StringVar(&f.bucketNamespace, "bucket-namespace", quotaservice.DefaultBucketNamespace, "Namespace of the AllowanceBuckets; created if missing.")
	fs.BoolVar(&f.skipRegistration, "skip-registrations", false, "Do not create the compute ResourceRegistrations.")
	fs.DurationVar(&f.holdGrace, "hold-grace", quotaservice.DefaultHoldGrace,
		"How long bucket allocations no granted claim explains are held before they are released.")
	fs.IntVar(&f.concurrency, "max-concurrent-consumers", quotaservice.DefaultMaxConcurrentConsumers, "Consumers evaluated in parallel.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `Address of the Prometheus metrics endpoint; "0" disables it.`)
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", "0", `Address of the /healthz and /readyz endpoints; "0" disables them.`)
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader so only one replica evaluates claims.")
	fs.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election lease (defaults to --bucket-namespace).")
	fs.StringVar(&f.leaderID, "leader-election-id", "compute-quota", "Name of the leader election lease.")
	f.serving = serving.NewOptions()
	f.serving.AddFlags(fs)
	fs.Float32Var(&f.qps, "kube-api-qps", 100, "Requests per second to the quota plane; a burst of claims needs one status write each.")
	fs.IntVar(&f.burst, "kube-api-burst", 200, "Burst of requests to the quota plane.")
	fs.BoolVar(&f.activate, "activate-entitlements", false,
		"Also play the service catalog: mark requested compute ServiceEntitlements Active (local platform only).")
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "compute-quota: %v\nRun compute-quota --help for usage.\n", err)
		return 2
	}
	opts, err := f.options()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: invalid configuration:\n%v\n", err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	cfg, err := f.restConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
		return 1
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	leaderNS := f.leaderNamespace
	if leaderNS == "" {
		leaderNS = opts.BucketNamespace
	}
	ctx := ctrl.SetupSignalHandler()
	mgr, err := quotaservice.NewManager(ctx, cfg, manager.Options{
		Metrics:                 f.serving.Metrics(f.metricsAddr),
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        f.leaderID,
		LeaderElectionNamespace: leaderNS,
	}, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
		return 1
	}
	if f.activate {
		if err := setupActivator(mgr); err != nil {
			fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
			return 1
		}
	}
	if err := addProbes(mgr); err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
		return 1
	}
	if err := mgr.Start(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
		return 1
	}
	return 0
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

// options turns the flags into service options.
func (f flags) options() (quotaservice.Options, error) {
	opts := quotaservice.Options{
		Project:                f.project,
		GrantName:              f.grantName,
		GrantNamespace:         f.grantNamespace,
		BucketNamespace:        f.bucketNamespace,
		SkipRegistrations:      f.skipRegistration,
		HoldGrace:              f.holdGrace,
		MaxConcurrentConsumers: f.concurrency,
	}
	if f.defaultGrant && f.project != "" {
		g, err := quotaservice.ComputeGrant(f.instances, f.vcpus, f.memory)
		if err != nil {
			return opts, fmt.Errorf("--default-instances/--default-vcpus/--default-memory: %w", err)
		}
		opts.DefaultGrant = g
	}
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	return opts, nil
}

// restConfig loads the quota plane's client configuration; a named
// kubeconfig that cannot be read is an error, never a silent fallback.
func (f flags) restConfig() (*rest.Config, error) {
	if f.kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("failed to load the quota plane configuration: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("failed to load --kubeconfig %s: %w", f.kubeconfig, err)
	}
	return cfg, nil
}
