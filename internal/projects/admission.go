package projects

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// AdmissionClusters resolves project clusters for the admission webhooks.
//
// Webhooks answer on every replica, but in kubeconfig mode the provider
// engages project planes only on the leader, since its Secret controller
// is leader-elected. AdmissionClusters returns the engaged cluster when
// there is one and otherwise builds a client-only cluster from the plane's
// kubeconfig Secret (read through reader, the host cluster's client), kept
// until the Secret changes. Such a cluster is never started: only its
// API reader, direct writes and configuration may be used, which is all
// admission needs. In single mode the one cluster is always known, and
// engaged is used alone.
type AdmissionClusters struct {
	engaged Clusters
	reader  client.Reader
	opts    Options
	scheme  *runtime.Scheme

	mu      sync.Mutex
	standby map[string]standbyCluster
}

// standbyCluster is a cluster built from a kubeconfig Secret.
type standbyCluster struct {
	hash    [sha256.Size]byte
	cluster cluster.Cluster
}

// NewAdmissionClusters returns the resolver the webhooks use: engaged is
// the multicluster manager, reader reads the host cluster's Secrets, scheme
// is the scheme of standby clusters.
func NewAdmissionClusters(o Options, engaged Clusters, reader client.Reader, scheme *runtime.Scheme) *AdmissionClusters {
	return &AdmissionClusters{engaged: engaged, reader: reader, opts: o, scheme: scheme, standby: map[string]standbyCluster{}}
}

// GetCluster returns the project cluster called name.
func (a *AdmissionClusters) GetCluster(ctx context.Context, name string) (cluster.Cluster, error) {
	if name == "" {
		return nil, errors.New("no project cluster named: the empty name is the host cluster")
	}
	cl, err := a.engaged.GetCluster(ctx, name)
	if err == nil || a.opts.Mode != ModeKubeconfig {
		return cl, err
	}
	return a.fromSecret(ctx, name)
}

// fromSecret returns the standby cluster of the kubeconfig Secret called
// name, building it when the Secret is new or changed.
func (a *AdmissionClusters) fromSecret(ctx context.Context, name string) (cluster.Cluster, error) {
	var secret corev1.Secret
	if err := a.reader.Get(ctx, types.NamespacedName{Namespace: a.opts.SecretNamespace, Name: name}, &secret); err != nil {
		return nil, fmt.Errorf("failed to read the kubeconfig Secret of project cluster %q: %w", name, err)
	}
	if secret.Labels[a.opts.SecretLabel] != "true" || secret.DeletionTimestamp != nil {
		return nil, fmt.Errorf("project cluster %q is not registered (Secret %s/%s lacks label %s=true or is being deleted)",
			name, a.opts.SecretNamespace, name, a.opts.SecretLabel)
	}
	data := secret.Data[a.opts.SecretKey]
	if len(data) == 0 {
		return nil, fmt.Errorf("the Secret of project cluster %q has no %q key", name, a.opts.SecretKey)
	}
	hash := sha256.Sum256(data)

	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.standby[name]; ok && s.hash == hash {
		return s.cluster, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the kubeconfig of project cluster %q: %w", name, err)
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) { o.Scheme = a.scheme })
	if err != nil {
		return nil, fmt.Errorf("failed to build a client for project cluster %q: %w", name, err)
	}
	a.standby[name] = standbyCluster{hash: hash, cluster: cl}
	return cl, nil
}
