// Package projects discovers project planes for the management role and
// says which project a namespace belongs to.
//
// Two modes:
//
//   - single: one project plane — the cluster the manager runs against —
//     engaged under one cluster name (default "single"). Several projects may
//     share it; the project of a namespace comes from a namespace label
//     (default resourcemanager.miloapis.com/project-name).
//   - kubeconfig: project planes are discovered dynamically through
//     multicluster-runtime's kubeconfig-secret provider. Every Secret in one
//     namespace of the host cluster labelled
//     sigs.k8s.io/multicluster-runtime-kubeconfig=true holds, under the key
//     "kubeconfig", the kubeconfig of one project plane; the Secret's name is
//     the cluster name, and the project is the cluster. Adding, changing or
//     deleting a Secret engages, re-engages or disengages its plane without a
//     restart.
//
// In both modes every request carries its cluster name; the empty name is
// the host cluster and is never used for project objects.
package projects

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
	"sigs.k8s.io/multicluster-runtime/providers/single"
)

// Mode is how project planes are discovered.
type Mode string

// Modes.
const (
	// ModeSingle serves one project plane: the cluster the manager runs
	// against.
	ModeSingle Mode = "single"
	// ModeKubeconfig discovers project planes from kubeconfig Secrets.
	ModeKubeconfig Mode = "kubeconfig"
)

// Defaults.
const (
	// DefaultSingleClusterName is the cluster name of the project plane in
	// single mode.
	DefaultSingleClusterName = "single"
	// DefaultProjectLabel is the namespace label naming its project in
	// single mode.
	DefaultProjectLabel = "resourcemanager.miloapis.com/project-name"
	// DefaultSecretNamespace holds the kubeconfig Secrets.
	DefaultSecretNamespace = "compute-system"
)

// Options configure project discovery.
type Options struct {
	// Mode is single or kubeconfig.
	Mode Mode
	// SingleClusterName is the cluster name of the project plane in single
	// mode.
	SingleClusterName string
	// ProjectLabel is the namespace label naming its project in single mode.
	ProjectLabel string
	// SecretNamespace is the host-cluster namespace of the kubeconfig
	// Secrets (kubeconfig mode).
	SecretNamespace string
	// SecretLabel selects the kubeconfig Secrets (label value "true").
	SecretLabel string
	// SecretKey is the Secret data key holding the kubeconfig.
	SecretKey string
}

// NewOptions returns the defaults: single mode.
func NewOptions() Options {
	return Options{
		Mode:              ModeSingle,
		SingleClusterName: DefaultSingleClusterName,
		ProjectLabel:      DefaultProjectLabel,
		SecretNamespace:   DefaultSecretNamespace,
		SecretLabel:       kubeconfig.DefaultKubeconfigSecretLabel,
		SecretKey:         kubeconfig.DefaultKubeconfigSecretKey,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&o.Mode), "project-discovery", string(o.Mode),
		`How project planes are found: "single" (the plane of --kubeconfig) or "kubeconfig" (one kubeconfig Secret per project plane in the host cluster).`)
	fs.StringVar(&o.SingleClusterName, "single-project-cluster-name", o.SingleClusterName,
		"Cluster name of the project plane in single mode.")
	fs.StringVar(&o.ProjectLabel, "project-label", o.ProjectLabel,
		"Namespace label naming the project a namespace belongs to (single mode).")
	fs.StringVar(&o.SecretNamespace, "project-kubeconfig-namespace", o.SecretNamespace,
		"Namespace of the host cluster holding the project planes' kubeconfig Secrets (kubeconfig mode).")
	fs.StringVar(&o.SecretLabel, "project-kubeconfig-label", o.SecretLabel,
		`Label (value "true") selecting the kubeconfig Secrets (kubeconfig mode).`)
	fs.StringVar(&o.SecretKey, "project-kubeconfig-key", o.SecretKey,
		"Data key of the kubeconfig in each Secret (kubeconfig mode).")
}

// Validate reports every configuration error at once, each naming its flag.
func (o Options) Validate() error {
	var errs []error
	switch o.Mode {
	case ModeSingle:
		if o.SingleClusterName == "" {
			errs = append(errs, errors.New("--single-project-cluster-name must not be empty: the empty name is the host cluster"))
		}
		for _, msg := range validation.IsQualifiedName(o.ProjectLabel) {
			errs = append(errs, fmt.Errorf("--project-label %q is not a label key: %s", o.ProjectLabel, msg))
		}
	case ModeKubeconfig:
		if o.SecretNamespace == "" {
			errs = append(errs, errors.New("--project-kubeconfig-namespace is required with --project-discovery=kubeconfig"))
		}
		for _, msg := range validation.IsQualifiedName(o.SecretLabel) {
			errs = append(errs, fmt.Errorf("--project-kubeconfig-label %q is not a label key: %s", o.SecretLabel, msg))
		}
		if o.SecretKey == "" {
			errs = append(errs, errors.New("--project-kubeconfig-key must not be empty"))
		}
	default:
		errs = append(errs, fmt.Errorf("--project-discovery must be %q or %q, got %q", ModeSingle, ModeKubeconfig, o.Mode))
	}
	return errors.Join(errs...)
}

// NewProvider returns the multicluster provider of the mode. In single mode
// it engages local, the cluster the manager runs against; in kubeconfig
// mode every discovered cluster is built with clusterOpts (which must set a
// scheme holding compute's types), its client with the rate limits of
// limits (QPS and Burst; a kubeconfig sets none, and client-go's 5 QPS
// would throttle a busy project).
func NewProvider(o Options, local cluster.Cluster, limits *rest.Config, clusterOpts ...cluster.Option) (multicluster.Provider, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Mode == ModeSingle {
		return single.New(o.SingleClusterName, local), nil
	}
	return kubeconfig.New(kubeconfig.Options{
		Namespace:             o.SecretNamespace,
		KubeconfigSecretLabel: o.SecretLabel,
		KubeconfigSecretKey:   o.SecretKey,
		ClusterOptions:        clusterOpts,
		RESTOptions: []func(*rest.Config) error{func(cfg *rest.Config) error {
			if limits != nil {
				cfg.QPS, cfg.Burst = limits.QPS, limits.Burst
			}
			return nil
		}},
	}), nil
}

// SecretSelector returns the label selector of the kubeconfig Secrets, to
// narrow the host cluster's Secret cache to them.
func (o Options) SecretSelector() map[string]string {
	return map[string]string{o.SecretLabel: "true"}
}

// Project is the project a namespace belongs to.
type Project struct {
	// Name of the project.
	Name string
	// Cluster is the name of the project plane's cluster.
	Cluster string
}

// ErrProjectUnresolvable means a namespace does not say which project it
// belongs to.
var ErrProjectUnresolvable = errors.New("project unresolvable")

// Clusters resolves a cluster by name; a multicluster manager is one.
type Clusters interface {
	GetCluster(ctx context.Context, name string) (cluster.Cluster, error)
}

// Resolver tells the project of a namespace in a project cluster.
type Resolver interface {
	// ProjectOf returns the project namespace belongs to in the cluster
	// clusterName. The error wraps ErrProjectUnresolvable when the
	// namespace does not say.
	ProjectOf(ctx context.Context, clusterName, namespace string) (Project, error)
}

// NewResolver returns the resolver of the mode.
func NewResolver(o Options, clusters Clusters) Resolver {
	if o.Mode == ModeSingle {
		return &labelResolver{label: o.ProjectLabel, clusters: clusters}
	}
	return clusterResolver{}
}

// clusterResolver: each cluster is one project (kubeconfig mode).
type clusterResolver struct{}

// ProjectOf returns the cluster as the project.
func (clusterResolver) ProjectOf(_ context.Context, clusterName, _ string) (Project, error) {
	if clusterName == "" {
		return Project{}, fmt.Errorf("%w: no cluster name", ErrProjectUnresolvable)
	}
	return Project{Name: clusterName, Cluster: clusterName}, nil
}

// labelResolver reads the project from a namespace label (single mode).
type labelResolver struct {
	label    string
	clusters Clusters
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// ProjectOf reads the namespace's project label. It reads the API server
// directly: a namespace informer would need list/watch on namespaces.
func (r *labelResolver) ProjectOf(ctx context.Context, clusterName, namespace string) (Project, error) {
	if clusterName == "" {
		return Project{}, fmt.Errorf("%w: no cluster name", ErrProjectUnresolvable)
	}
	cl, err := r.clusters.GetCluster(ctx, clusterName)
	if err != nil {
		return Project{}, fmt.Errorf("failed to get project cluster %q: %w", clusterName, err)
	}
	var ns corev1.Namespace
	if err := cl.GetAPIReader().Get(ctx, types.NamespacedName{Name: namespace}, &ns); err != nil {
		return Project{}, fmt.Errorf("failed to get namespace %s: %w", namespace, err)
	}
	name := ns.Labels[r.label]
	if name == "" {
		return Project{}, fmt.Errorf("%w: namespace %s has no %s label", ErrProjectUnresolvable, namespace, r.label)
	}
	return Project{Name: name, Cluster: clusterName}, nil
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
