package management

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a CA of the test that issues certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a key pair signed by the CA, for a client or a server.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{"localhost"}, IPAddresses: nil}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTheWebhookServerAnswersOnlyTheAPIServers (#38 item 7): with
// --webhook-client-ca-file, a caller without a client certificate, or with
// one of another CA (a tenant's, say, from the plane's own CA), is refused
// at the TLS handshake; the API server's certificate gets its answer.
func TestTheWebhookServerAnswersOnlyTheAPIServers(t *testing.T) {
	serving, clients, other := newTestCA(t, "serving"), newTestCA(t, "webhook-clients"), newTestCA(t, "plane")
	caFile := filepath.Join(t.TempDir(), "clients.crt")
	if err := os.WriteFile(caFile, clients.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	require, err := requireClientCerts(caFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allowed")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving.issue(t, "localhost", x509.ExtKeyUsageServerAuth)}, MinVersion: tls.VersionTLS12}
	require(srv.TLS)
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(serving.cert)
	call := func(certs ...tls.Certificate) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
		resp, err := c.Post(strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/validate-compute-datumapis-com-v1alpha-workload", "application/json", nil)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for name, certs := range map[string][]tls.Certificate{
		"no client certificate":                 nil,
		"a client certificate of another CA":    {other.issue(t, "alice", x509.ExtKeyUsageClientAuth)},
		"the webhook clients' CA's server cert": {clients.issue(t, "localhost", x509.ExtKeyUsageServerAuth)},
	} {
		if err := call(certs...); err == nil {
			t.Errorf("a caller with %s was answered; want a refused handshake", name)
		} else {
			t.Logf("a caller with %s: %v", name, err)
		}
	}
	if err := call(clients.issue(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageClientAuth)); err != nil {
		t.Errorf("the API server's client certificate: %v", err)
	}
}

func TestAClientCAFileThatCannotBeReadNamesTheFlag(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		if _, err := requireClientCerts(path); err == nil || !strings.Contains(err.Error(), "--"+ClientCAFlag) {
			t.Errorf("requireClientCerts(%s): %v; want an error naming --%s", path, err, ClientCAFlag)
		}
	}
}
