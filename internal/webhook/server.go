package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/webhook/validation"
)

// Webhook paths, as served in single mode and after the cluster prefix in
// multi-project mode.
const (
	// DefaultWorkloadPath serves Workload defaulting.
	DefaultWorkloadPath = "/mutate-compute-datumapis-com-v1alpha-workload"
	// ValidateWorkloadPath serves Workload validation.
	ValidateWorkloadPath = "/validate-compute-datumapis-com-v1alpha-workload"
	// ValidateProjectionPath serves the projected-Instance guard.
	ValidateProjectionPath = "/validate-compute-datumapis-com-v1alpha-instance-projection"
	// ValidateInstanceTypePath serves InstanceType validation.
	ValidateInstanceTypePath = "/validate-compute-datumapis-com-v1alpha-instancetype"
)

// clusterPathPrefix starts every path of multi-project mode.
const clusterPathPrefix = "/clusters/"

// ClusterPath returns the path a project cluster's API server calls path
// at in multi-project mode.
func ClusterPath(cluster, path string) string {
	return clusterPathPrefix + cluster + path
}

// Clusters resolves a project cluster by name; a multicluster manager is
// one.
type Clusters interface {
	GetCluster(ctx context.Context, name string) (cluster.Cluster, error)
}

// Identities are users and groups.
type Identities struct {
	// Users are user names.
	Users []string
	// Groups are group names.
	Groups []string
}

// DefaultProjectionDeleters are the controllers that delete projected
// Instances: the garbage collector (following the owner WorkloadDeployment)
// and the namespace controller, with or without service-account
// credentials.
var DefaultProjectionDeleters = Identities{Users: []string{
	"system:kube-controller-manager",
	"system:serviceaccount:kube-system:generic-garbage-collector",
	"system:serviceaccount:kube-system:namespace-controller",
}}

// Options configure the webhooks.
type Options struct {
	// Clusters resolves the project cluster of a request. Required.
	Clusters Clusters
	// Scheme decodes admitted objects; it must hold compute's types.
	// Required.
	Scheme *runtime.Scheme
	// SingleCluster, when set, serves the plain paths for that cluster
	// (single mode). When empty, every path carries the cluster name:
	// /clusters/<cluster>/<path> (multi-project mode).
	SingleCluster string
	// ProjectionWriters may write projected Instances in every cluster, in
	// addition to the identity the manager uses in that cluster.
	ProjectionWriters Identities
	// ProjectionDeleters may delete projected Instances;
	// DefaultProjectionDeleters when empty.
	ProjectionDeleters Identities
	// DeprecationGracePeriod is how long an InstanceType stays Deprecated
	// before it may be Disabled; validation.DefaultDeprecationGracePeriod
	// when zero, no wait when negative.
	DeprecationGracePeriod time.Duration
	// Now is the clock of the grace period; time.Now when nil.
	Now func() time.Time
}

// Register registers the webhooks on srv.
func Register(srv crwebhook.Server, opts Options) error {
	if srv == nil || opts.Clusters == nil || opts.Scheme == nil {
		return errors.New("webhooks need a server, a cluster resolver and a scheme")
	}
	if len(opts.ProjectionDeleters.Users) == 0 && len(opts.ProjectionDeleters.Groups) == 0 {
		opts.ProjectionDeleters = DefaultProjectionDeleters
	}
	wa := &workloadAdmission{clusters: opts.Clusters}
	guard := &projectionGuard{
		clusters:   opts.Clusters,
		writers:    opts.ProjectionWriters,
		deleters:   opts.ProjectionDeleters,
		identities: newIdentityCache(),
	}
	if opts.DeprecationGracePeriod == 0 {
		opts.DeprecationGracePeriod = validation.DefaultDeprecationGracePeriod
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ita := &instanceTypeAdmission{clusters: opts.Clusters, gracePeriod: opts.DeprecationGracePeriod, now: opts.Now}
	hooks := map[string]*admission.Webhook{
		DefaultWorkloadPath:      admission.WithDefaulter[*computev1alpha.Workload](opts.Scheme, wa),
		ValidateWorkloadPath:     admission.WithValidator[*computev1alpha.Workload](opts.Scheme, wa),
		ValidateProjectionPath:   {Handler: guard},
		ValidateInstanceTypePath: admission.WithValidator[*computev1alpha.InstanceType](opts.Scheme, ita),
	}
	for path, hook := range hooks {
		if opts.SingleCluster != "" {
			name := opts.SingleCluster
			hook.WithContextFunc = func(ctx context.Context, _ *http.Request) context.Context {
				return withCluster(ctx, name)
			}
			srv.Register(path, hook)
			continue
		}
		hook.WithContextFunc = func(ctx context.Context, r *http.Request) context.Context {
			return withCluster(ctx, r.PathValue("cluster"))
		}
		srv.Register(clusterPathPrefix+"{cluster}"+path, hook)
	}
	return nil
}

// clusterKey carries the project cluster of a request in its context.
type clusterKey struct{}

// withCluster returns ctx carrying the cluster name.
func withCluster(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clusterKey{}, name)
}

// clusterFrom returns the cluster name of a request.
func clusterFrom(ctx context.Context) (string, error) {
	name, _ := ctx.Value(clusterKey{}).(string)
	if name == "" || strings.Contains(name, "/") {
		return "", errors.New("the webhook was called without a project cluster in its path")
	}
	return name, nil
}

// clusterOf returns the project cluster of a request.
func clusterOf(ctx context.Context, clusters Clusters) (cluster.Cluster, error) {
	name, err := clusterFrom(ctx)
	if err != nil {
		return nil, err
	}
	cl, err := clusters.GetCluster(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("project cluster %q is not served by this compute-manager (yet): %w", name, err)
	}
	return cl, nil
}
