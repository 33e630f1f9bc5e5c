package management

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientCAFlag names the file of the CA whose client certificates the
// admission webhook server requires.
const ClientCAFlag = "webhook-client-ca-file"

// requireClientCerts returns the TLS option that makes the webhook server
// refuse, at the handshake, every caller without a client certificate
// signed by a CA of the PEM file at path: the API servers present one
// (their AdmissionConfiguration's kubeConfigFile), nobody else holds one,
// so nobody else learns what admission would answer (a Workload's
// references' read checks included). An unreadable file, or one with no
// certificate, is an error naming the flag.
func requireClientCerts(path string) (func(*tls.Config), error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", ClientCAFlag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--%s: %s holds no PEM certificate", ClientCAFlag, path)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}, nil
}
