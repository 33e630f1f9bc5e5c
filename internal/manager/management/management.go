// Package management assembles the management role of compute-manager: a
// multicluster manager over the project planes (internal/projects) with the
// WorkloadReconciler, the InstanceType controller (status.deprecatedAt and
// Ready of the catalog), the references controller (missing Secrets and
// ConfigMaps) and the admission webhooks, whose server joins /readyz.
//
// compute-manager calls Setup when --enable-management-controllers is set,
// adds the cell role and the probes to the same manager when they are asked
// for, and starts it:
//
//	role, err := management.Setup(cfg, opts)   // cfg: --kubeconfig (project plane, or host cluster in kubeconfig mode)
//	...
//	err = role.Start(ctx)
//
// With Options.Federation (--federation-kubeconfig) set, as compute-manager
// requires, Setup also registers the controllers that talk to the federation
// plane: the WorkloadDeploymentFederator and the PropagationPolicy controller
// (sharing per-city locks), the cell reachability tracker that tells the
// federator which cities are not heard from, and the InstanceProjector that
// projects the Instances cells write back into their projects. Tests of the
// Workload controller alone leave it nil.
package management

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/controller/companions"
	fedcontroller "github.com/citycells/compute/internal/controller/federation"
	"github.com/citycells/compute/internal/controller/instancetype"
	"github.com/citycells/compute/internal/controller/projector"
	"github.com/citycells/compute/internal/controller/workload"
	"github.com/citycells/compute/internal/manager/hub"
	"github.com/citycells/compute/internal/projects"
	"github.com/citycells/compute/internal/webhook"
	"github.com/citycells/compute/internal/webhook/validation"
)

// Options configure the management role.
type Options struct {
	// Projects say how project planes are discovered.
	Projects projects.Options
	// Webhook configures the admission webhook server.
	Webhook WebhookOptions
	// Manager are the controller-runtime manager options (metrics, health
	// probes, leader election). Setup fills in Scheme, WebhookServer and
	// the cache's narrowing when they are unset.
	Manager ctrl.Options
	// Federation is the client configuration of the federation plane
	// (--federation-kubeconfig). When set, Setup registers the
	// WorkloadDeploymentFederator, the PropagationPolicy controller and the
	// InstanceProjector; compute-manager requires
	// it. Nil leaves them out (tests of the Workload controller alone).
	Federation *rest.Config
	// LocalCompanions, without Federation, writes the companions of
	// referenced data next to their sources in the project namespace, for
	// cell controllers that run on the project plane itself (compute-manager
	// with both roles and no --federation-kubeconfig).
	LocalCompanions bool
	// FailoverRate is how many Workloads a second may start or move a
	// city failover (--failover-rate); zero or less: no limit.
	FailoverRate float64
	// StatusResyncAfter is how long a hub copy's status may lag its
	// generation before the federator asks Karmada to collect it again
	// (federation.DefaultStatusResyncAfter when zero; tests shorten it).
	StatusResyncAfter time.Duration
	// DebugAPI configures the debug API (instances' log and exec); it
	// serves only in single mode, where the local manager's plane is the
	// project plane whose aggregator forwards to it.
	DebugAPI DebugAPIOptions
}

// WebhookOptions configure the admission webhook server.
type WebhookOptions struct {
	// Disabled turns the webhooks off (development only: nothing validates
	// Workloads then).
	Disabled bool
	// Host is the address the server binds; all interfaces when empty.
	Host string
	// Port is the port the server listens on.
	Port int
	// CertDir holds tls.crt and tls.key, reloaded when they change.
	CertDir string
	// ProjectionWriters are users, besides the manager's own identity in
	// each project plane, allowed to write projected Instances.
	ProjectionWriters []string
	// ProjectionWriterGroups are groups allowed to write projected
	// Instances.
	ProjectionWriterGroups []string
	// TLSOpts are the server's TLS options (compute-manager's, shared by
	// every server it runs); nil keeps controller-runtime's defaults.
	TLSOpts []func(*tls.Config)
	// ClientCAFile, when set, is the CA whose client certificates the
	// server requires of every caller (--webhook-client-ca-file): the API
	// servers' (docs/install.md, "The webhook server's callers").
	ClientCAFile string
	// DeprecationGracePeriod is how long an InstanceType stays Deprecated
	// before admission lets it be Disabled.
	DeprecationGracePeriod time.Duration
}

// NewOptions returns the defaults: single mode, webhooks on 9443 with
// certificates from /tmp/k8s-webhook-server/serving-certs.
func NewOptions() Options {
	return Options{
		Projects:     projects.NewOptions(),
		FailoverRate: workload.DefaultFailoverRate,
		Webhook: WebhookOptions{
			Port:                   crwebhook.DefaultPort,
			CertDir:                "/tmp/k8s-webhook-server/serving-certs",
			DeprecationGracePeriod: validation.DefaultDeprecationGracePeriod,
		},
	}
}

// AddFlags binds the options, except Manager, to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Projects.AddFlags(fs)
	o.DebugAPI.AddFlags(fs)
	fs.BoolVar(&o.Webhook.Disabled, "disable-webhooks", o.Webhook.Disabled,
		"Do not serve the admission webhooks, and federate the Workloads of project planes that do not send them to compute's admission (development and tests only: unsafe where tenants write).")
	fs.StringVar(&o.Webhook.Host, "webhook-host", o.Webhook.Host, "Address the admission webhook server binds (all when empty).")
	fs.IntVar(&o.Webhook.Port, "webhook-port", o.Webhook.Port, "Port of the admission webhook server.")
	fs.StringVar(&o.Webhook.CertDir, "webhook-cert-dir", o.Webhook.CertDir,
		"Directory holding the webhook server's tls.crt and tls.key (a mounted Secret or CSI volume).")
	fs.StringVar(&o.Webhook.ClientCAFile, ClientCAFlag, o.Webhook.ClientCAFile,
		"PEM file of the CA whose client certificates the webhook server requires of every caller (the API servers present one through their AdmissionConfiguration); empty: callers are not authenticated.")
	fs.StringSliceVar(&o.Webhook.ProjectionWriters, "projection-writers", o.Webhook.ProjectionWriters,
		"Users allowed to write projected Instances besides compute-manager's own identity in each project plane.")
	fs.StringSliceVar(&o.Webhook.ProjectionWriterGroups, "projection-writer-groups", o.Webhook.ProjectionWriterGroups,
		"Groups allowed to write projected Instances.")
	fs.DurationVar(&o.Webhook.DeprecationGracePeriod, "instance-type-deprecation-grace-period", o.Webhook.DeprecationGracePeriod,
		"How long an InstanceType stays Deprecated (since status.deprecatedAt) before it may be Disabled; negative for no wait.")
	fs.Float64Var(&o.FailoverRate, "failover-rate", o.FailoverRate,
		"How many Workloads a second may start or move a city failover, platform-wide (like Karmada's --resource-eviction-rate); 0 for no limit.")
}

// Validate reports every configuration error at once, each naming its flag.
func (o Options) Validate() error {
	errs := []error{o.Projects.Validate(), o.DebugAPI.Validate()}
	if o.DebugAPI.BindAddress != "" && o.Projects.Mode != projects.ModeSingle {
		errs = append(errs, errors.New("--debug-api-bind-address serves one project plane: it needs the single project mode"))
	}
	if !o.Webhook.Disabled {
		if o.Webhook.CertDir == "" {
			errs = append(errs, errors.New("--webhook-cert-dir is required unless --disable-webhooks is set"))
		}
		if o.Webhook.Port <= 0 || o.Webhook.Port > 65535 {
			errs = append(errs, fmt.Errorf("--webhook-port must be between 1 and 65535, got %d", o.Webhook.Port))
		}
	}
	return errors.Join(errs...)
}

// NewScheme returns the scheme of the management role: Kubernetes' built-in
// types, compute and networking.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(computev1alpha.AddToScheme(s))
	utilruntime.Must(networkingv1alpha.AddToScheme(s))
	return s
}

// Role is the management role, set up and ready to start.
type Role struct {
	mgr mcmanager.Manager
}

// Manager returns the multicluster manager over the project planes, for
// controllers that join the role.
func (r *Role) Manager() mcmanager.Manager { return r.mgr }

// Start runs the role until ctx ends.
func (r *Role) Start(ctx context.Context) error {
	if err := r.mgr.Start(ctx); err != nil {
		return fmt.Errorf("management role: %w", err)
	}
	return nil
}

// Setup builds the multicluster manager for opts against cfg — the project
// plane in single mode, the host cluster holding the kubeconfig Secrets in
// kubeconfig mode — and registers the Workload controller and the webhooks.
func Setup(cfg *rest.Config, opts Options) (*Role, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid management configuration: %w", err)
	}
	mgrOpts, err := managerOptions(opts)
	if err != nil {
		return nil, err
	}
	local, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("failed to create the management manager: %w", err)
	}
	mgr, err := multicluster(cfg, local, opts.Projects, mgrOpts.Scheme)
	if err != nil {
		return nil, err
	}
	if err := setupControllers(mgr, opts); err != nil {
		return nil, err
	}
	if err := setupDebugAPI(local, cfg, opts.Federation, opts.DebugAPI); err != nil {
		return nil, err
	}
	if !opts.Webhook.Disabled {
		if err := registerWebhooks(mgr, local, opts, mgrOpts.Scheme); err != nil {
			return nil, err
		}
	}
	return &Role{mgr: mgr}, nil
}

// managerOptions returns the options of the role's local manager: opts'
// own, with the role's scheme, a webhook server unless webhooks are
// disabled, and its cache narrowed to what the role reads there.
func managerOptions(opts Options) (ctrl.Options, error) {
	mgrOpts := opts.Manager
	if mgrOpts.Scheme == nil {
		mgrOpts.Scheme = NewScheme()
	}
	if !opts.Webhook.Disabled && mgrOpts.WebhookServer == nil {
		tlsOpts := slices.Clone(opts.Webhook.TLSOpts)
		if opts.Webhook.ClientCAFile != "" {
			require, err := requireClientCerts(opts.Webhook.ClientCAFile)
			if err != nil {
				return ctrl.Options{}, err
			}
			tlsOpts = append(tlsOpts, require)
		}
		mgrOpts.WebhookServer = crwebhook.NewServer(crwebhook.Options{
			Host: opts.Webhook.Host, Port: opts.Webhook.Port, CertDir: opts.Webhook.CertDir, TLSOpts: tlsOpts,
		})
	}
	narrowCache(&mgrOpts.Cache, opts.Projects)
	return mgrOpts, nil
}

// multicluster builds the multicluster manager over local and the project
// planes it discovers (the provider of projectOpts, with the role's scheme
// and project cache), and sets up their discovery.
func multicluster(cfg *rest.Config, local ctrl.Manager, projectOpts projects.Options, scheme *runtime.Scheme) (mcmanager.Manager, error) {
	provider, err := projects.NewProvider(projectOpts, local, cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Cache = projectCache()
	})
	if err != nil {
		return nil, err
	}
	mgr, err := mcmanager.WithMultiCluster(local, provider)
	if err != nil {
		return nil, fmt.Errorf("failed to create the multicluster manager: %w", err)
	}
	if p, ok := provider.(interface {
		SetupWithManager(context.Context, mcmanager.Manager) error
	}); ok {
		if err := p.SetupWithManager(context.Background(), mgr); err != nil {
			return nil, fmt.Errorf("failed to set up project discovery: %w", err)
		}
	}
	return mgr, nil
}

// setupControllers registers the role's controllers on mgr: Workload and
// InstanceType, then the federation's (with the cells' health tracker) when
// opts has a federation plane, or the local referenced-data controller when
// it asks for one.
func setupControllers(mgr mcmanager.Manager, opts Options) error {
	workloads := &workload.Reconciler{FailoverRate: workload.NewFailoverLimiter(opts.FailoverRate), RequireAdmission: !opts.Webhook.Disabled}
	var health *cellhealth.Tracker
	if opts.Federation != nil {
		// The tracker tells the federator which cities' cells are not
		// heard from, so their deployments are reported stale, and the
		// Workload controller which fallbacks can take a failover.
		health = &cellhealth.Tracker{}
		workloads.Reachable = func(city string) bool { return !health.City(city).Unreachable }
	}
	if err := workloads.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the Workload controller: %w", err)
	}
	if err := (&instancetype.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("failed to set up the InstanceType controller: %w", err)
	}
	if opts.Federation != nil {
		return setupFederation(mgr, opts.Federation, health, opts.StatusResyncAfter)
	}
	if opts.LocalCompanions {
		if err := (&companions.Reconciler{Local: true}).SetupWithManager(mgr, nil); err != nil {
			return fmt.Errorf("failed to set up the referenced-data controller: %w", err)
		}
	}
	return nil
}

// registerWebhooks registers the admission webhooks on mgr's webhook server
// and its readiness check.
func registerWebhooks(mgr mcmanager.Manager, local ctrl.Manager, opts Options, scheme *runtime.Scheme) error {
	wopts := webhook.Options{
		// Webhooks answer on every replica, not only on the leader
		// that engaged the project planes.
		Clusters: projects.NewAdmissionClusters(opts.Projects, mgr, local.GetClient(), scheme),
		Scheme:   scheme,
		ProjectionWriters: webhook.Identities{
			Users: opts.Webhook.ProjectionWriters, Groups: opts.Webhook.ProjectionWriterGroups,
		},
		DeprecationGracePeriod: opts.Webhook.DeprecationGracePeriod,
	}
	if opts.Projects.Mode == projects.ModeSingle {
		wopts.SingleCluster = opts.Projects.SingleClusterName
	}
	if err := webhook.Register(mgr.GetWebhookServer(), wopts); err != nil {
		return fmt.Errorf("failed to register the webhooks: %w", err)
	}
	if err := mgr.AddReadyzCheck("management-webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("failed to add the webhook readiness check: %w", err)
	}
	return nil
}

// setupFederation registers the WorkloadDeploymentFederator, the
// PropagationPolicy controller and the Instance projector on mgr, talking
// to the federation plane at hubConfig.
func setupFederation(mgr mcmanager.Manager, hubConfig *rest.Config, health *cellhealth.Tracker, statusResyncAfter time.Duration) error {
	hubCluster, err := hub.AddCluster(mgr.GetLocalManager(), hubConfig)
	if err != nil {
		return err
	}
	// The federator and the policy controller decide over the same
	// policies: they share the per-city locks.
	locks := &fedcontroller.CityLocks{}
	if err := health.SetupWithManager(mgr.GetLocalManager(), hubCluster); err != nil {
		return fmt.Errorf("failed to set up the cell reachability tracker: %w", err)
	}
	if err := (&fedcontroller.Reconciler{Locks: locks, Health: health, StatusResyncAfter: statusResyncAfter}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the WorkloadDeployment federator: %w", err)
	}
	if err := (&fedcontroller.PolicyReconciler{Locks: locks}).SetupWithManager(mgr.GetLocalManager(), hubCluster); err != nil {
		return fmt.Errorf("failed to set up the PropagationPolicy controller: %w", err)
	}
	if err := (&projector.Reconciler{}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the Instance projector: %w", err)
	}
	if err := (&companions.Reconciler{}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the referenced-data controller: %w", err)
	}
	return SetupCompanionGrant(mgr.GetLocalManager(), hubCluster, hubConfig)
}

// narrowCache limits what the manager's own cache holds: in single mode its
// cluster is the project plane (revisions narrowed to compute's); in
// kubeconfig mode it only needs the kubeconfig Secrets.
func narrowCache(c *cache.Options, p projects.Options) {
	if c.ByObject == nil {
		c.ByObject = map[client.Object]cache.ByObject{}
	}
	if p.Mode == projects.ModeSingle {
		for obj, by := range projectCache().ByObject {
			if _, set := c.ByObject[obj]; !set {
				c.ByObject[obj] = by
			}
		}
		return
	}
	secret := &corev1.Secret{}
	if _, set := c.ByObject[secret]; !set {
		c.ByObject[secret] = cache.ByObject{
			Namespaces: map[string]cache.Config{p.SecretNamespace: {}},
			Label:      labels.SelectorFromSet(p.SecretSelector()),
		}
	}
}

// projectCache is the cache of a project plane: ControllerRevisions narrowed
// to those compute records for Workloads, and no object's managedFields
// (no controller reads them; the manager's own cache, the project plane in
// single mode, strips them too).
func projectCache() cache.Options {
	req, err := labels.NewRequirement(computev1alpha.WorkloadUIDLabel, selection.Exists, nil)
	utilruntime.Must(err)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.ControllerRevision{}: {Label: labels.NewSelector().Add(*req)},
		},
	}
}
