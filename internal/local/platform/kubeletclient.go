//go:build linux

package platform

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// A cell with a real node reaches its kubelet for Pod logs and exec (what
// `datumctl compute logs` and `exec` end at, docs/debugging.md): its
// kube-apiserver dials the node's InternalIP with a client certificate of
// a CA of its own, which the kubelet trusts beside the platform CA. The CA
// is made before the planes start, since the apiserver's flags name its
// files.
const (
	// kubeletClientDir holds the CA and the apiserver's client certificate,
	// under the state directory.
	kubeletClientDir = "kubelet-client"
	// kubeletClientUser is the certificate's user, as kubeadm names it.
	kubeletClientUser = "kube-apiserver-kubelet-client"
)

// kubeletClientArgs writes the kubelet client CA and certificate of the
// cell apiservers (once; every cell shares them) and returns their flags.
func (p *Platform) kubeletClientArgs() (map[string]string, error) {
	dir := filepath.Join(p.cfg.StateDir, kubeletClientDir)
	crt, key := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if _, err := os.Stat(crt); err != nil {
		if err := writeKubeletClient(dir); err != nil {
			return nil, fmt.Errorf("failed to write the kubelet client certificate: %w", err)
		}
	}
	return map[string]string{
		"kubelet-client-certificate":      crt,
		"kubelet-client-key":              key,
		"kubelet-preferred-address-types": "InternalIP",
		// The kubelets serve with certificates of the platform CA.
		"kubelet-certificate-authority": filepath.Join(p.cfg.StateDir, "pki", "ca.crt"),
	}, nil
}

// kubeletClientCAs is the kubelet's clientCAFile: the platform CA (its
// clients: metrics-server) and the apiservers' kubelet client CA.
func (p *Platform) kubeletClientCAs() (string, error) {
	platformCA, err := os.ReadFile(p.env.CAPath())
	if err != nil {
		return "", err
	}
	clientCA, err := os.ReadFile(filepath.Join(p.cfg.StateDir, kubeletClientDir, "ca.crt"))
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.cfg.StateDir, kubeletClientDir, "kubelet-client-cas.crt")
	return path, os.WriteFile(path, bytes.Join([][]byte{platformCA, clientCA}, []byte("\n")), 0o600)
}

// writeKubeletClient writes ca.crt, client.crt and client.key to dir.
func writeKubeletClient(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "compute-local-kubelet-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: kubeletClientUser, Organization: []string{"kubeadm:cluster-admins"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":     {Type: "CERTIFICATE", Bytes: caDER},
		"client.crt": {Type: "CERTIFICATE", Bytes: der},
		"client.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}
