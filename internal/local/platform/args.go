//go:build linux

package platform

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/citycells/compute/internal/planes"
)

// Karmada component names, also their process and log file names.
const (
	componentAggregatedAPIServer = "karmada-aggregated-apiserver"
	componentWebhook             = "karmada-webhook"
	componentControllerManager   = "karmada-controller-manager"
	componentScheduler           = "karmada-scheduler"
	componentManagerPrefix       = "compute-manager-"
)

// Karmada's fixed names in the hub.
const (
	karmadaSystemNamespace  = "karmada-system"
	karmadaClusterNamespace = "karmada-cluster"
	aggregatedServiceName   = "karmada-aggregated-apiserver"
	// aggregatedServiceHost is the name kube-apiserver's aggregator
	// verifies the aggregated apiserver's certificate against.
	aggregatedServiceHost = aggregatedServiceName + "." + karmadaSystemNamespace + ".svc"
	// aggregatedEtcdPrefix keeps the aggregated apiserver's Clusters apart
	// from every plane's prefix (/<plane>) in the shared etcd.
	aggregatedEtcdPrefix = "/karmada-aggregated-apiserver"
)

// Cluster health timing for a local platform: Karmada's defaults make a dead
// member NotReady after ~31 s and Ready again ~37 s after it returns.
var clusterHealthArgs = map[string]string{
	"cluster-status-update-frequency": "1s",
	"cluster-failure-threshold":       "3s",
	"cluster-success-threshold":       "1s",
	"cluster-monitor-period":          "1s",
	"cluster-monitor-grace-period":    "10s",
	"cluster-startup-grace-period":    "10s",
	"cluster-lease-duration":          "10s",
}

// karmadaPorts are the ports of the Karmada components, chosen free at Up.
type karmadaPorts struct {
	aggregated       int
	webhook          int
	webhookHealth    int
	webhookMetrics   int
	controllerHealth int
	controllerMetric int
	schedulerHealth  int
	schedulerMetrics int
}

// newKarmadaPorts assigns ports from a list of at least 8 free ports.
func newKarmadaPorts(p []int) karmadaPorts {
	return karmadaPorts{
		aggregated: p[0], webhook: p[1], webhookHealth: p[2], webhookMetrics: p[3],
		controllerHealth: p[4], controllerMetric: p[5], schedulerHealth: p[6], schedulerMetrics: p[7],
	}
}

// aggregatedAPIServerArgs are karmada-aggregated-apiserver's flags. It
// stores Clusters in the shared etcd under its own prefix and authenticates
// and authorizes through the hub, whose front proxy it trusts by reading
// kube-system/extension-apiserver-authentication.
func aggregatedAPIServerArgs(hubKubeconfig, etcdURL, certFile, keyFile string, port int) []string {
	return planes.FlagList(map[string]string{
		"kubeconfig":                   hubKubeconfig,
		"authentication-kubeconfig":    hubKubeconfig,
		"authorization-kubeconfig":     hubKubeconfig,
		"etcd-servers":                 etcdURL,
		"etcd-prefix":                  aggregatedEtcdPrefix,
		"tls-cert-file":                certFile,
		"tls-private-key-file":         keyFile,
		"bind-address":                 "127.0.0.1",
		"secure-port":                  strconv.Itoa(port),
		"enable-priority-and-fairness": "false",
		"profiling":                    "false",
	})
}

// webhookArgs are karmada-webhook's flags; certDir holds tls.crt/tls.key.
func webhookArgs(hubKubeconfig, certDir string, ports karmadaPorts) []string {
	return planes.FlagList(map[string]string{
		"kubeconfig":                hubKubeconfig,
		"bind-address":              "127.0.0.1",
		"secure-port":               strconv.Itoa(ports.webhook),
		"cert-dir":                  certDir,
		"health-probe-bind-address": hostPort(ports.webhookHealth),
		"metrics-bind-address":      hostPort(ports.webhookMetrics),
		"kube-api-qps":              "100",
		"kube-api-burst":            "200",
	})
}

// unusedKarmadaControllers are the karmada-controller-manager controllers
// compute has no use for: multi-cluster services and endpoint slices,
// federated HPAs and resource quotas (compute has its own quota), the
// aggregated apiserver's member RBAC (unifiedAuth), pull-mode agents' CSRs,
// workload rebalancing, remedies and cluster taint policies. Each one
// watches the hub, and some every member cluster, for kinds compute never
// creates. What compute relies on stays: cluster and clusterStatus,
// binding, execution, workStatus and bindingStatus, namespace (it creates
// the federation namespaces in the cells), gracefulEviction and
// applicationFailover. docs/install.md recommends the same list.
var unusedKarmadaControllers = []string{
	"serviceExport", "endpointSlice", "serviceImport", "multiclusterservice",
	"endpointsliceCollect", "endpointsliceDispatch",
	"federatedHorizontalPodAutoscaler", "cronFederatedHorizontalPodAutoscaler",
	"federatedResourceQuotaSync", "federatedResourceQuotaStatus", "federatedResourceQuotaEnforcement",
	"unifiedAuth", "agentcsrapproving", "workloadRebalancer", "remedy", "clustertaintpolicy",
}

// skippedPropagatingAPIs are the kinds of the hub Karmada's resource
// detector must not watch: compute propagates WorkloadDeployments only, and
// the hub's Instances (the cells' write-backs, whose status changes all the
// time) and Workloads are never propagated. Without it the detector keeps
// every hub Instance in its cache and reconciles each one, twice, on every
// change of its metadata.
const skippedPropagatingAPIs = "compute.datumapis.com/v1alpha/Instance,Workload"

// skippedPropagatingNamespaces are the hub namespaces Karmada's namespace
// controller must not copy into every cell: Karmada's default (kube-.*)
// and compute's own hub namespaces. compute-system exists in every cell
// already (the cell's install makes it), so copying it fails over and over
// ("already exists … Karmada will not manage this resource"); compute-cells
// holds the cells' hub identities and means nothing in a cell.
const skippedPropagatingNamespaces = "kube-.*,compute-system,compute-cells"

// retryArgs bound how long karmada-controller-manager waits before it
// retries a failed sync. With Karmada's defaults every failed sync takes a
// token of a bucket of 100 refilled at 10 per second, and an item's own
// delay doubles up to 16m40s: while the hub's apiserver is down every sync
// fails at once, hundreds of retries reserve tokens far into the future,
// and after the hub is back the Works wait tens of seconds for their turn
// (measured: a scale-up converged 31.6 s and 54.1 s after a 3 s hub
// apiserver outage). A larger bucket, a faster refill and a 5 s ceiling keep
// a retry within seconds of the hub's return; a healthy platform never
// gets near them.
var retryArgs = map[string]string{
	"rate-limiter-qps":         "100",
	"rate-limiter-bucket-size": "1000",
	"rate-limiter-max-delay":   "5s",
}

// controllerManagerArgs are karmada-controller-manager's flags: every
// default port overridden, no leader election, fast cluster health, only
// the controllers compute needs, no resource modeling (compute schedules
// by city label, never by the members' free Pods and Nodes, which
// --enable-cluster-resource-modeling watches in every cell) and the
// detector kept off the kinds compute never propagates.
func controllerManagerArgs(hubKubeconfig string, ports karmadaPorts) []string {
	controllers := []string{"*"}
	for _, c := range unusedKarmadaControllers {
		controllers = append(controllers, "-"+c)
	}
	flags := map[string]string{
		"kubeconfig":                       hubKubeconfig,
		"leader-elect":                     "false",
		"health-probe-bind-address":        hostPort(ports.controllerHealth),
		"metrics-bind-address":             hostPort(ports.controllerMetric),
		"kube-api-qps":                     "200",
		"kube-api-burst":                   "400",
		"cluster-api-qps":                  "200",
		"cluster-api-burst":                "400",
		"controllers":                      strings.Join(controllers, ","),
		"enable-cluster-resource-modeling": "false",
		"skipped-propagating-apis":         skippedPropagatingAPIs,
		"skipped-propagating-namespaces":   skippedPropagatingNamespaces,
	}
	maps.Copy(flags, clusterHealthArgs)
	maps.Copy(flags, retryArgs)
	return planes.FlagList(flags)
}

// schedulerArgs are karmada-scheduler's flags.
func schedulerArgs(hubKubeconfig string, ports karmadaPorts) []string {
	return planes.FlagList(map[string]string{
		"kubeconfig":                hubKubeconfig,
		"leader-elect":              "false",
		"health-probe-bind-address": hostPort(ports.schedulerHealth),
		"metrics-bind-address":      hostPort(ports.schedulerMetrics),
		"kube-api-qps":              "200",
		"kube-api-burst":            "400",
	})
}

// kcmHealthArgs make a plane's kube-controller-manager serve /healthz on a
// loopback port, with a certificate it makes itself; /healthz needs no
// credentials (--authorization-always-allow-paths).
func kcmHealthArgs(port int) map[string]string {
	return map[string]string{
		"secure-port":  strconv.Itoa(port),
		"bind-address": "127.0.0.1",
	}
}

// hpaController is kube-controller-manager's name for the
// HorizontalPodAutoscaler controller.
const hpaController = "horizontalpodautoscaling"

// cellControllers are the kube-controller-manager controllers of a cell:
// the planes' defaults and the HorizontalPodAutoscaler controller (per-city
// autoscaling; it reads metrics.k8s.io, which only a cell with a real node
// serves); with a real node also nodelifecycle (a node that stops
// reporting is NotReady, and its Pods not Ready, within
// nodeMonitorGracePeriod), and deployment and replicaset, for people trying
// things on the node and the runtime benchmark's baseline.
func cellControllers(node bool) []string {
	controllers := append(slices.Clone(planes.DefaultControllers), hpaController)
	if node {
		controllers = append(controllers, "nodelifecycle", "deployment", "replicaset")
	}
	return controllers
}

// hpaControllerArgs tune the cells' HorizontalPodAutoscaler controller for
// a laptop: it reads metrics every 5 s instead of 15 s, and scales down
// after 30 s of lower recommendations instead of 5 minutes (scaling up is
// immediate either way). It runs with kube-controller-manager's own
// credentials (system:masters, no --use-service-account-credentials), so
// it may read and update the scale subresource of any kind, compute's
// included.
var hpaControllerArgs = map[string]string{
	"horizontal-pod-autoscaler-sync-period":             "5s",
	"horizontal-pod-autoscaler-downscale-stabilization": "30s",
}
