// Package debugapi tests the debug API (internal/debugapi) as a project
// plane serves it: a real kube-apiserver with the aggregation layer, the
// APIService and Service compute registers, the tenants' roles of
// config/rbac/tenant aggregated into view and edit by a real
// kube-controller-manager, and the debug API itself authenticating the
// aggregator and asking the plane for SubjectAccessReviews. The hub is a
// stand-in answering the cluster proxy (the real Karmada path runs in
// test/e2e/runtime, on a real node).
package debugapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/debugapi"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/integration/fixtures"
)

const plane = "project"

var (
	env *fixtures.Env
	// admin is the plane's admin client.
	admin client.Client
	// hubCalls records the paths the stand-in hub was asked.
	hubCalls = &calls{}
	// debugPort is the port the debug API listens on.
	debugPort int
)

// calls is a list of request paths, written by the hub's handler.
type calls struct {
	mu    sync.Mutex
	paths []string
}

func (c *calls) add(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, p)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{{
			Name: plane, Controllers: []string{"clusterrole-aggregation-controller"}, Aggregation: true, CRDDirs: []string{fixtures.CRDDir()},
		}},
		Setup: setup,
	}))
}

// setup installs the tenants' roles, starts the stand-in hub and the debug
// API, and registers it.
func setup(ctx context.Context, e *fixtures.Env) error {
	env, admin = e, e.Client(plane)
	if err := installTenantRoles(ctx); err != nil {
		return err
	}
	hubConfig := startHub()
	ports, err := planes.FreePorts(1)
	if err != nil {
		return err
	}
	debugPort = ports[0]
	certDir, err := os.MkdirTemp("", "debugapi-cert-")
	if err != nil {
		return err
	}
	host := "compute-debug.compute-system.svc"
	certPEM, keyPEM, err := e.IssueServingCert(host, host)
	if err != nil {
		return err
	}
	if err := errors.Join(os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600),
		os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600)); err != nil {
		return err
	}
	r := &debugapi.Runnable{
		Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), CertDir: certDir, Project: admin, ProjectConfig: e.Config(plane),
		Hub: hubConfig, ResponseTimeout: 5 * time.Second,
	}
	e.Go("debug API", r.Start)
	if err := register(ctx, ports[0]); err != nil {
		return err
	}
	return waitServed(ctx)
}

// installTenantRoles creates the ClusterRoles of config/rbac/tenant as the
// overlays name them.
func installTenantRoles(ctx context.Context) error {
	data, err := os.ReadFile(fixtures.RepoDir("config", "rbac", "tenant", "role.yaml"))
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(doc, role); err != nil {
			return err
		}
		role.Name = "compute-" + role.Name
		if err := admin.Create(ctx, role); err != nil {
			return err
		}
	}
}

// startHub starts the stand-in Karmada: it lists one Cluster per city and
// answers the cluster proxy's log with two lines.
func startHub() *rest.Config {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hubCalls.add(r.URL.Path)
		if r.URL.Path == "/apis/cluster.karmada.io/v1alpha1/clusters" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprint(w, `{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"ClusterList","metadata":{},"items":[`+
				`{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"cell-dfw"}}]}`)
			return
		}
		_, _ = fmt.Fprint(w, "GET / from 10.0.0.1\nGET /?id=2 from 10.0.0.1\n")
	}))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, BearerToken: "relay", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// register creates the Namespace, ExternalName Service and APIService the
// local platform creates.
func register(ctx context.Context, port int) error {
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "compute-system"}}},
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "compute-debug", "namespace": "compute-system"},
			"spec": map[string]any{"type": "ExternalName", "externalName": "localhost",
				"ports": []any{map[string]any{"name": "https", "port": int64(port), "protocol": "TCP"}}},
		}},
		{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": debugapi.APIServiceName},
			"spec": map[string]any{
				"caBundle": base64.StdEncoding.EncodeToString(env.CAPEM()), "group": debugapi.Group, "version": debugapi.Version,
				"groupPriorityMinimum": int64(1000), "versionPriority": int64(10),
				"service": map[string]any{"name": "compute-debug", "namespace": "compute-system", "port": int64(port)},
			},
		}},
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			return fmt.Errorf("failed to create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// waitServed waits until the plane serves the debug API's discovery.
func waitServed(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(env.Config(plane))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/apis", debugapi.Group, debugapi.Version).DoRaw(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the project plane never served the debug API: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
