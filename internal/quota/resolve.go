package quota

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// errNamespaceUnreadable marks a resolution that failed because the cell
// namespace could not be read (a transient error), as opposed to a namespace
// that says nothing about its project. Release retries the former and only
// gives up on the latter.
var errNamespaceUnreadable = errors.New("the cell namespace cannot be read")

// TargetFromNamespace resolves where the claims of the Instances in a cell
// namespace live, from the namespace's federation labels: the project from
// meta.datumapis.com/upstream-cluster-name ("cluster-<project cluster>", "/"
// written as "_"; the project is the last segment of the cluster name, as
// Milo keys project clusters by bare project name) and the claim namespace
// from meta.datumapis.com/upstream-namespace. It wraps ErrProjectUnresolvable
// when either is missing or malformed.
func TargetFromNamespace(ns *corev1.Namespace) (Target, error) {
	clusterLabel, ok := ns.Labels[computev1alpha.UpstreamClusterNameLabel]
	if !ok {
		return Target{}, fmt.Errorf("%w: namespace %q has no %s label", ErrProjectUnresolvable, ns.Name, computev1alpha.UpstreamClusterNameLabel)
	}
	cluster, ok := names.ClusterFromUpstreamName(clusterLabel)
	if !ok {
		return Target{}, fmt.Errorf("%w: label %s=%q of namespace %q is not of the form cluster-<project>",
			ErrProjectUnresolvable, computev1alpha.UpstreamClusterNameLabel, clusterLabel, ns.Name)
	}
	project := cluster[strings.LastIndex(cluster, "/")+1:]
	if errs := validation.IsDNS1123Label(project); len(errs) > 0 {
		return Target{}, fmt.Errorf("%w: label %s=%q of namespace %q names no valid project: %s",
			ErrProjectUnresolvable, computev1alpha.UpstreamClusterNameLabel, clusterLabel, ns.Name, strings.Join(errs, "; "))
	}
	claimNS, ok := ns.Labels[computev1alpha.UpstreamNamespaceLabel]
	if !ok {
		return Target{}, fmt.Errorf("%w: namespace %q has no %s label", ErrProjectUnresolvable, ns.Name, computev1alpha.UpstreamNamespaceLabel)
	}
	if errs := validation.IsDNS1123Label(claimNS); len(errs) > 0 {
		return Target{}, fmt.Errorf("%w: label %s=%q of namespace %q is not a namespace name: %s",
			ErrProjectUnresolvable, computev1alpha.UpstreamNamespaceLabel, claimNS, ns.Name, strings.Join(errs, "; "))
	}
	return Target{Project: project, Namespace: claimNS}, nil
}
