//go:build linux

package platform

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/citycells/compute/internal/planes"
)

// The debug API (internal/debugapi, docs/debugging.md): the management
// role's first replica serves it on loopback, and the project plane's
// aggregator reaches it through an ExternalName Service, as the hub
// reaches Karmada's aggregated apiserver.
const (
	// flagDebugAPIBindAddress turns the debug API on.
	flagDebugAPIBindAddress = "debug-api-bind-address"
	flagDebugAPICertDir     = "debug-api-cert-dir"
	// debugServiceName is its Service in the project plane.
	debugServiceName = "compute-debug"
)

// debugServiceHost is the name the aggregator verifies the debug API's
// serving certificate against.
func debugServiceHost() string {
	return debugServiceName + "." + identityNamespace + ".svc"
}

// withDebugAPI gives the first replica of a management role the debug
// API: a loopback port and a serving certificate for its Service's name.
func (p *Platform) withDebugAPI(r *managerRole, flags managerFlags) error {
	if !flags[flagDebugAPIBindAddress] || r.replica != 0 {
		return nil
	}
	ports, err := planes.FreePorts(1)
	if err != nil {
		return err
	}
	r.debugAPIPort = ports[0]
	r.debugAPICertDir = filepath.Join(p.cfg.StateDir, "managers", componentManagerPrefix+r.plane, "debug-api-certs")
	_, _, err = p.writeServingCert(r.debugAPICertDir, debugServiceHost(), debugServiceHost())
	return err
}

// debugAPIArgs are the debug API flags of a role that serves it.
func debugAPIArgs(r managerRole) map[string]string {
	if r.debugAPIPort == 0 {
		return nil
	}
	return map[string]string{
		flagDebugAPIBindAddress: hostPort(r.debugAPIPort),
		flagDebugAPICertDir:     r.debugAPICertDir,
	}
}

// registerDebugAPI registers the debug API of r in its project plane: the
// Namespace and ExternalName Service the APIService names, and the
// APIService trusting the platform CA.
func (p *Platform) registerDebugAPI(ctx context.Context, r managerRole) error {
	if r.debugAPIPort == 0 {
		return nil
	}
	c, err := newClient(p.env.Plane(r.plane))
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": identityNamespace},
	}}
	api := aggregatedAPI{
		service: debugServiceName, namespace: identityNamespace, port: r.debugAPIPort,
		group: "debug.compute.datumapis.com", version: "v1alpha", groupPriorityMinimum: 1000,
		caBundle: base64.StdEncoding.EncodeToString(p.env.CAPEM()),
	}
	for _, o := range append([]*unstructured.Unstructured{ns}, api.objects()...) {
		if err := apply(ctx, c, o); err != nil {
			return fmt.Errorf("failed to register the debug API of %s: %w", r.name, err)
		}
	}
	p.progress.linef("%s: debug API (instances' log and exec) registered in %s", r.name, r.plane)
	return nil
}

// aggregatedAPI is an API server of the platform, running on the host,
// that a plane serves through API aggregation.
type aggregatedAPI struct {
	// service and namespace name the ExternalName Service (to localhost)
	// the APIService sends to; port is the server's.
	service, namespace string
	port               int
	// group and version are the API served; groupPriorityMinimum ranks
	// the group in discovery.
	group, version       string
	groupPriorityMinimum int64
	// caBundle (base64) is what the plane trusts the server's certificate
	// through.
	caBundle string
}

// objects returns the ExternalName Service and the APIService that
// register the API in a plane.
func (a aggregatedAPI) objects() []*unstructured.Unstructured {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": a.service, "namespace": a.namespace},
		"spec": map[string]any{
			"type":         "ExternalName",
			"externalName": "localhost",
			"ports":        []any{map[string]any{"name": "https", "port": int64(a.port), "protocol": "TCP"}},
		},
	}}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": a.version + "." + a.group},
		"spec": map[string]any{
			"caBundle":             a.caBundle,
			"group":                a.group,
			"version":              a.version,
			"groupPriorityMinimum": a.groupPriorityMinimum,
			"versionPriority":      int64(10),
			"service":              map[string]any{"name": a.service, "namespace": a.namespace, "port": int64(a.port)},
		},
	}}
	return []*unstructured.Unstructured{svc, apiService}
}
