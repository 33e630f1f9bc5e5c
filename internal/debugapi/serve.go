package debugapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Runnable serves the debug API over TLS for as long as its manager runs
// (a controller-runtime Runnable; every replica serves, not only the
// leader: the API keeps no state).
type Runnable struct {
	// Addr is the address to listen on (host:port).
	Addr string
	// CertDir holds tls.crt and tls.key, read again on every handshake so
	// a renewed certificate is used without a restart.
	CertDir string
	// Project reads Instances, WorkloadDeployments and Workloads.
	Project client.Reader
	// ProjectConfig is the project plane, for SubjectAccessReviews and the
	// front-proxy configuration.
	ProjectConfig *rest.Config
	// Hub is the relay's identity in the federation plane.
	Hub *rest.Config
	// ResponseTimeout bounds the wait for a cell's first response.
	ResponseTimeout time.Duration
}

// NeedLeaderElection is false: every replica serves.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (r *Runnable) Start(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(r.ProjectConfig)
	if err != nil {
		return fmt.Errorf("debug API: %w", err)
	}
	authn, err := r.authenticator(ctx, cs)
	if err != nil || authn == nil {
		return err
	}
	srv, err := NewServer(Config{
		Project: r.Project, Reviews: cs.AuthorizationV1().SubjectAccessReviews(), Hub: r.Hub,
		Authenticator: authn, ResponseTimeout: r.ResponseTimeout,
	})
	if err != nil {
		return err
	}
	return r.serve(ctx, srv)
}

// authenticator reads the front-proxy configuration, retrying (and
// saying why) until it can: the ConfigMap or the right to read it may come
// after the manager starts, and the debug API must not stop the manager.
func (r *Runnable) authenticator(ctx context.Context, cs kubernetes.Interface) (authenticator.Request, error) {
	var authn authenticator.Request
	err := wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		a, err := RequestHeaderAuthenticator(ctx, cs)
		if err != nil {
			logf.FromContext(ctx).Error(err, "The debug API cannot authenticate its aggregator yet; retrying")
			return false, nil
		}
		authn = a
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("debug API: %w", err)
	}
	return authn, nil
}

// serve listens on Addr with TLS, asking for (not requiring) a client
// certificate: the aggregator presents its front-proxy certificate,
// which the authenticator verifies.
func (r *Runnable) serve(ctx context.Context, h http.Handler) error {
	certFile, keyFile := filepath.Join(r.CertDir, "tls.crt"), filepath.Join(r.CertDir, "tls.key")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return fmt.Errorf("debug API: serving certificate: %w", err)
	}
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequestClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			return &c, err
		},
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("debug API: %w", err)
	}
	server := &http.Server{Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}
	logf.FromContext(ctx).Info("Serving the debug API", "address", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- server.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("debug API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("debug API: %w", err)
	}
	return nil
}
