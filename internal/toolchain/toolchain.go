// Package toolchain locates the real control-plane binaries (etcd,
// kube-apiserver, kube-controller-manager, Karmada, metrics-server) that hack/tools.sh builds
// from the Go module proxy into a versioned cache directory.
//
// The cache layout is $COMPUTE_TOOLS_DIR/<component>-<version>/bin/<binary>,
// with COMPUTE_TOOLS_DIR defaulting to <user cache dir>/compute-tools. Versions
// are pinned once, in hack/versions.env, and generated into this package.
package toolchain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvToolsDir overrides the cache directory.
const EnvToolsDir = "COMPUTE_TOOLS_DIR"

// Binary names known to the toolchain.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	// Kubelet and KubeScheduler run the local platform's real nodes.
	Kubelet                    = "kubelet"
	KubeScheduler              = "kube-scheduler"
	KarmadaControllerManager   = "karmada-controller-manager"
	KarmadaScheduler           = "karmada-scheduler"
	KarmadaWebhook             = "karmada-webhook"
	KarmadaAggregatedAPIServer = "karmada-aggregated-apiserver"
	Kustomize                  = "kustomize"
	// Goreleaser builds the CLI's release archives (make release-snapshot).
	Goreleaser = "goreleaser"
	// Promtool runs the alerts' unit tests (config/components/prometheus).
	Promtool = "promtool"
	// MetricsServer serves metrics.k8s.io beside the local platform's real
	// nodes (hack/tools.sh builds it from sigs.k8s.io/metrics-server).
	MetricsServer = "metrics-server"
)

// Dir returns the root of the tool cache.
func Dir() (string, error) {
	if d := os.Getenv(EnvToolsDir); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "compute-tools"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the tool cache: set %s: %w", EnvToolsDir, err)
	}
	return filepath.Join(home, ".cache", "compute-tools"), nil
}

// component returns the versioned cache directory name holding a binary.
func component(name string) (string, error) {
	switch name {
	case Etcd:
		return "etcd-" + EtcdVersion, nil
	case KubeAPIServer, KubeControllerManager, Kubelet, KubeScheduler:
		return "kubernetes-" + KubernetesVersion, nil
	case KarmadaControllerManager, KarmadaScheduler, KarmadaWebhook, KarmadaAggregatedAPIServer:
		return "karmada-" + KarmadaVersion, nil
	case Kustomize:
		return "kustomize-" + KustomizeVersion, nil
	case Goreleaser:
		return "goreleaser-" + GoreleaserVersion, nil
	case Promtool:
		return "promtool-" + PromtoolVersion, nil
	case MetricsServer:
		return "metrics-server-" + MetricsServerVersion, nil
	default:
		return "", fmt.Errorf("unknown tool %q", name)
	}
}

// Path returns the cached path of a binary and an error that names the fix
// when it has not been built yet.
func Path(name string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	comp, err := component(name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, comp, "bin", name)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s %s is not built yet (looked in %s): run `make tools`", name, comp, p)
		}
		return "", err
	}
	return p, nil
}

// KarmadaCRDDir returns the directory holding Karmada's CRDs, copied from the
// karmada module by hack/tools.sh.
func KarmadaCRDDir() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "karmada-"+KarmadaVersion, "crds")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("karmada CRDs are not in the tool cache (looked in %s): run `make tools`", p)
	}
	return p, nil
}
