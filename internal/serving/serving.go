// Package serving is what compute's managers share to run: their main
// (Main: flags, logging, exit codes), the plane they run against
// (LoadConfig), and what they serve, secured — metrics over
// HTTPS behind authentication and authorization, and HTTP/2 off for
// metrics and webhooks. compute-manager and compute-quota share it.
package serving

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options secure what the manager serves: the metrics endpoint (HTTPS
// with authentication and authorization, as kubebuilder scaffolds it) and
// HTTP/2, off by default for metrics and webhooks so a client cannot use
// HTTP/2 stream resets against them (CVE-2023-44487, CVE-2023-39325).
type Options struct {
	// MetricsSecure serves metrics over HTTPS; every request is then
	// authenticated (TokenReview) and authorized (SubjectAccessReview for
	// get on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key of the metrics endpoint;
	// empty means a self-signed certificate generated at start.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook servers speak HTTP/2.
	EnableHTTP2 bool
}

// NewOptions returns the defaults: secure metrics, no HTTP/2.
func NewOptions() Options {
	return Options{MetricsSecure: true}
}

// AddFlags binds the serving options to a flag set.
func (s *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&s.MetricsSecure, "metrics-secure", s.MetricsSecure,
		"Serve metrics over HTTPS, authenticating and authorizing every scrape against the API server (get on /metrics). "+
			"--metrics-secure=false serves plain HTTP to anyone who can reach the port.")
	fs.StringVar(&s.MetricsCertDir, "metrics-cert-dir", s.MetricsCertDir,
		"Directory holding tls.crt and tls.key of the metrics endpoint (a self-signed certificate when empty).")
	fs.BoolVar(&s.EnableHTTP2, "enable-http2", s.EnableHTTP2,
		"Let the metrics and webhook servers speak HTTP/2 (off: HTTP/1.1 only, against HTTP/2 stream-reset attacks).")
}

// TLSOpts are the TLS options of every server the manager runs.
func (s Options) TLSOpts() []func(*tls.Config) {
	if s.EnableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// Metrics returns the metrics server options for addr.
func (s Options) Metrics(addr string) metricsserver.Options {
	o := metricsserver.Options{
		BindAddress:   addr,
		SecureServing: s.MetricsSecure,
		TLSOpts:       s.TLSOpts(),
		CertDir:       s.MetricsCertDir,
	}
	if s.MetricsSecure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// LoadConfig reads the kubeconfig at path (the --kubeconfig flag), or
// $KUBECONFIG / in-cluster when it is empty. A named kubeconfig that
// cannot be read is an error, never a silent fallback.
func LoadConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("cannot find a cluster to run against: pass --kubeconfig or set $KUBECONFIG: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("failed to load --kubeconfig %q: %w", path, err)
	}
	return cfg, nil
}
