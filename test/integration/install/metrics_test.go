package install_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/serving"
)

// TestMetricsNeedATokenAllowedToGetMetrics runs a manager with compute's
// serving options as the management-plane overlay's ServiceAccount and
// scrapes it: no token is 401, a token without get on /metrics is 403, a
// token bound to compute-metrics-reader gets the metrics, and the server
// never agrees to HTTP/2.
func TestMetricsNeedATokenAllowedToGetMetrics(t *testing.T) {
	installed(t)
	port := freePort(t)
	opts := serving.NewOptions()
	// The manager's own identity, with the overlay's compute-metrics-auth
	// binding, reviews the scrapers' tokens.
	self := serviceAccountConfig(t, project, "compute-system", "compute-manager")
	mgr, err := ctrl.NewManager(self, ctrl.Options{
		Metrics:                opts.Metrics("127.0.0.1:" + strconv.Itoa(port)),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	prometheus := serviceAccountConfig(t, project, "default", "prometheus")
	stranger := serviceAccountConfig(t, project, "default", "stranger")
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "prometheus-compute-metrics"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "compute-metrics-reader"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}},
	}}
	if err := env.Client(project).Create(context.Background(), binding); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}

	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	// The certificate is self-signed (no --metrics-cert-dir): what is
	// checked here is who may read, not who serves.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed test server
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	scrape := func(token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// Wait for the server to listen (it starts with the manager).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the metrics server never listened")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if code, body := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("a scrape without a token got %d %q, want 401", code, body)
	}
	if code, body := scrape(stranger.BearerToken); code != http.StatusForbidden {
		t.Errorf("a token without get on /metrics got %d %q, want 403", code, body)
	}
	if code, body := scrape(prometheus.BearerToken); code != http.StatusOK {
		t.Fatalf("a compute-metrics-reader token got %d %q, want 200", code, body)
	}
	// HTTP/2 off: offered h2 first, the server picks http/1.1.
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ //nolint:gosec // self-signed test server
		InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("the metrics server negotiated %q with a client offering h2, want http/1.1 only", p)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
