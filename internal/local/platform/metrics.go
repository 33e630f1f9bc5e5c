//go:build linux

package platform

import (
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
)

// metrics-server serves the resource metrics API (metrics.k8s.io: what
// `kubectl top` and the HPA controller read) in every cell that runs a real
// node, from the node's kubelet (/metrics/resource). It runs as a process
// of the platform beside the kubelet, like Karmada's aggregated apiserver
// beside the hub, and is registered with the cell's kube-apiserver as the
// APIService v1beta1.metrics.k8s.io.
const (
	componentMetricsServer = "metrics-server"
	// metricsAPIService is the APIService metrics-server serves.
	metricsAPIService = "v1beta1.metrics.k8s.io"
	// metricsServiceHost is the name the cell's aggregator verifies
	// metrics-server's certificate against (its Service in kube-system).
	metricsServiceHost = "metrics-server.kube-system.svc"
	// metricsServerUser is who metrics-server is, to the cell's apiserver
	// and to the kubelet alike: the common name of its client certificate.
	// A certificate and not a ServiceAccount token, because the local
	// nodes' kubelets authenticate certificates only.
	metricsServerUser = "metrics-server"
	// metricResolution is how often metrics-server scrapes the kubelets:
	// the 15 s the project recommends at most (its minimum is 10 s, its
	// default 60 s), so the HPA controller sees a load within about 30 s.
	metricResolution = 15 * time.Second
)

// metricsServerManifest is metrics-server's RBAC and registration in a cell.
//
//go:embed manifests/metrics-server.yaml
var metricsServerManifest string

// metricsServerComponent names the metrics-server of a city's cell.
func metricsServerComponent(city string) string {
	return componentMetricsServer + "-" + strings.ToLower(city)
}

// metricsServerFiles are the files a cell's metrics-server reads.
type metricsServerFiles struct {
	kubeconfig, certFile, keyFile, caFile string
}

// metricsServerArgs are metrics-server's flags: loopback only, the cell's
// apiserver for its informers and for delegated authentication and
// authorization, and every node's kubelet at its InternalIP and the port
// the Node reports, verified against the platform CA (which signs the
// kubelets' serving certificates: no --kubelet-insecure-tls).
func metricsServerArgs(f metricsServerFiles, port int) []string {
	return planes.FlagList(map[string]string{
		"kubeconfig":                      f.kubeconfig,
		"authentication-kubeconfig":       f.kubeconfig,
		"authorization-kubeconfig":        f.kubeconfig,
		"bind-address":                    "127.0.0.1",
		"secure-port":                     strconv.Itoa(port),
		"tls-cert-file":                   f.certFile,
		"tls-private-key-file":            f.keyFile,
		"kubelet-certificate-authority":   f.caFile,
		"kubelet-preferred-address-types": "InternalIP",
		"kubelet-use-node-status-port":    "true",
		"metric-resolution":               metricResolution.String(),
		"profiling":                       "false",
	})
}

// metricsServerObjects renders the manifest for a metrics-server on port,
// trusted through caBundle (base64).
func metricsServerObjects(port int, caBundle string) ([]*unstructured.Unstructured, error) {
	rendered := strings.NewReplacer(
		"{{port}}", strconv.Itoa(port), "{{caBundle}}", caBundle, "{{user}}", metricsServerUser,
	).Replace(metricsServerManifest)
	return decodeObjects([]byte(rendered))
}

// startMetricsServer starts the metrics-server of a node's cell, registers
// it and waits until the cell's aggregator reports the APIService
// Available.
//
// Its readiness endpoint is /livez: serving, its informers synced and its
// scrape loop on time. Its own /readyz also wants two scrapes with data,
// 15 to 30 s after it starts, which Up would otherwise wait for (the first
// rates come then whatever Up does) and `status` would call a problem
// after every `up`.
func (p *Platform) startMetricsServer(ctx context.Context, n nodePlan) error {
	binary, err := toolchain.Path(toolchain.MetricsServer)
	if err != nil {
		return err
	}
	pl := p.env.Plane(n.cell)
	c, err := newClient(pl)
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Dir, componentMetricsServer)
	files := metricsServerFiles{kubeconfig: filepath.Join(dir, "kubeconfig"), caFile: p.env.CAPath()}
	if files.certFile, files.keyFile, err = p.writeServingCert(dir, componentMetricsServer, metricsServiceHost); err != nil {
		return err
	}
	if err := writePlaneKubeconfig(pl, files.kubeconfig, metricsServerUser); err != nil {
		return err
	}
	objs, err := metricsServerObjects(n.metricsPort, base64.StdEncoding.EncodeToString(p.env.CAPEM()))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := apply(ctx, c, o); err != nil {
			return fmt.Errorf("%s: %w", n.cell, err)
		}
	}
	if err := p.startComponent(ctx, planes.ComponentSpec{
		Name: metricsServerComponent(n.City), Plane: n.cell, Binary: binary, Port: n.metricsPort,
		Args: metricsServerArgs(files, n.metricsPort),
	}, "https://"+hostPort(n.metricsPort)+"/livez", false); err != nil {
		return err
	}
	if err := p.waitMetricsAPIAvailable(ctx, c, n); err != nil {
		return err
	}
	p.progress.linef("%s serves %s in %s (scraping node %s every %s)",
		metricsServerComponent(n.City), metricsAPIService, n.cell, n.Name, metricResolution)
	return nil
}

// waitMetricsAPIAvailable waits until the cell's aggregator reports the
// metrics APIService Available: it reaches metrics-server and trusts it.
func (p *Platform) waitMetricsAPIAvailable(ctx context.Context, c client.Client, n nodePlan) error {
	last := errors.New("no Available condition yet")
	err := p.poll(ctx, func(ctx context.Context) (bool, error) {
		var available bool
		available, last = apiServiceAvailable(ctx, c, metricsAPIService)
		return available, nil
	})
	if err != nil {
		return fmt.Errorf("%s does not serve APIService %s; see %s: %w",
			n.cell, metricsAPIService, p.logPath(metricsServerComponent(n.City)), errors.Join(err, last))
	}
	return nil
}

// apiServiceAvailable reports whether an APIService is Available; when it
// is not, the error says why.
func apiServiceAvailable(ctx context.Context, c client.Client, name string) (bool, error) {
	svc := &unstructured.Unstructured{}
	svc.SetAPIVersion("apiregistration.k8s.io/v1")
	svc.SetKind("APIService")
	if err := c.Get(ctx, client.ObjectKey{Name: name}, svc); err != nil {
		return false, err
	}
	conditions, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
	for _, raw := range conditions {
		cond, _ := raw.(map[string]any)
		if cond["type"] != "Available" {
			continue
		}
		if cond["status"] == "True" {
			return true, nil
		}
		return false, fmt.Errorf("condition Available=%v: %v: %v", cond["status"], cond["reason"], cond["message"])
	}
	return false, errors.New("no Available condition yet")
}
