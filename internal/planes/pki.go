package planes

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for a local platform left running for months
// and short enough that nobody mistakes these certificates for real ones.
const certValidity = 365 * 24 * time.Hour

// keyPair is a certificate with its private key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// authority signs certificates with its key pair.
type authority struct {
	keyPair
}

// newAuthority generates a self-signed CA.
func newAuthority(commonName string) (*authority, error) {
	tmpl := &x509.Certificate{
		Subject:  pkix.Name{CommonName: commonName, Organization: []string{"compute"}},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		IsCA:     true,
	}
	key, err := stamp(tmpl, "CA key")
	if err != nil {
		return nil, err
	}
	kp, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, fmt.Errorf("failed to self-sign CA %q: %w", commonName, err)
	}
	return &authority{keyPair: *kp}, nil
}

// serving issues a TLS serving certificate for localhost, 127.0.0.1 and ::1
// plus extra SANs; an extra SAN that parses as an IP becomes an IP SAN.
func (a *authority) serving(commonName string, extraSANs ...string) (*keyPair, error) {
	dns := []string{"localhost"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, san := range extraSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
			continue
		}
		dns = append(dns, san)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dns,
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return a.issue(tmpl)
}

// client issues a client certificate; Kubernetes reads the user from the
// common name and the groups from the organizations.
func (a *authority) client(user string, groups ...string) (*keyPair, error) {
	if user == "" {
		return nil, errors.New("a client certificate needs a user name")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return a.issue(tmpl)
}

// issue fills in serial, key and validity of tmpl and signs it with the CA.
func (a *authority) issue(tmpl *x509.Certificate) (*keyPair, error) {
	key, err := stamp(tmpl, "key")
	if err != nil {
		return nil, err
	}
	kp, err := sign(tmpl, a.cert, key, a.key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	return kp, nil
}

// stamp generates the key of a certificate to be made from tmpl and fills
// in tmpl's serial number, validity (from an hour ago, for certValidity)
// and basic constraints; what names the key in an error.
func stamp(tmpl *x509.Certificate, what string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate %s: %w", what, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(certValidity)
	tmpl.BasicConstraintsValid = true
	return key, nil
}

// sign creates the certificate of key's public half signed by signer.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
	}, nil
}

// newSerial returns a random 128-bit serial number.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("failed to generate serial number: %w", err)
	}
	return serial, nil
}

// encodeKey PEM-encodes a private key as PKCS#8.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// signingKey is a bare key pair, used to sign service-account tokens.
type signingKey struct {
	keyPEM    []byte
	publicPEM []byte
}

// newSigningKey generates a service-account signing key (ES256).
func newSigningKey() (*signingKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate service-account key: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("failed to encode service-account public key: %w", err)
	}
	return &signingKey{
		keyPEM:    keyPEM,
		publicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}, nil
}

// writeFiles writes each path → content pair under dir, keys readable only by
// the owner.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", name, err)
		}
	}
	return nil
}

// environmentPKI holds the authorities shared by every plane of an
// Environment.
type environmentPKI struct {
	ca                *authority
	frontProxyCA      *authority
	frontProxyClient  *keyPair
	caPath            string
	frontProxyCAPath  string
	frontProxyCrtPath string
	frontProxyKeyPath string
}

// frontProxyClientName is the common name kube-apiserver presents to
// aggregated apiservers and the only name they accept request headers from.
const frontProxyClientName = "front-proxy-client"

// newEnvironmentPKI generates the CA and front-proxy PKI and writes them to
// dir.
func newEnvironmentPKI(dir string) (*environmentPKI, error) {
	ca, err := newAuthority("compute-planes-ca")
	if err != nil {
		return nil, err
	}
	fpCA, err := newAuthority("compute-planes-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	fpClient, err := fpCA.client(frontProxyClientName)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, map[string][]byte{
		"ca.crt":                 ca.certPEM,
		"ca.key":                 ca.keyPEM,
		"front-proxy-ca.crt":     fpCA.certPEM,
		"front-proxy-ca.key":     fpCA.keyPEM,
		"front-proxy-client.crt": fpClient.certPEM,
		"front-proxy-client.key": fpClient.keyPEM,
	}); err != nil {
		return nil, err
	}
	return &environmentPKI{
		ca:                ca,
		frontProxyCA:      fpCA,
		frontProxyClient:  fpClient,
		caPath:            filepath.Join(dir, "ca.crt"),
		frontProxyCAPath:  filepath.Join(dir, "front-proxy-ca.crt"),
		frontProxyCrtPath: filepath.Join(dir, "front-proxy-client.crt"),
		frontProxyKeyPath: filepath.Join(dir, "front-proxy-client.key"),
	}, nil
}

// ClientAuthority is a CA of its own, apart from an Environment's, with
// one client certificate it issued, written to files.
type ClientAuthority struct {
	// CAFile, CertFile and KeyFile are the PEM files of the CA's
	// certificate and of the client's certificate and key.
	CAFile, CertFile, KeyFile string
}

// WriteClientAuthority generates a CA named commonName and a client
// certificate of it for user, and writes them into dir as ca.crt,
// client.crt and client.key. A server that trusts only this CA for its
// callers answers only the holder of that one certificate — not the
// planes' users, whose certificates the Environment's CA signs.
func WriteClientAuthority(dir, commonName, user string) (ClientAuthority, error) {
	ca, err := newAuthority(commonName)
	if err != nil {
		return ClientAuthority{}, err
	}
	kp, err := ca.client(user)
	if err != nil {
		return ClientAuthority{}, err
	}
	if err := writeFiles(dir, map[string][]byte{"ca.crt": ca.certPEM, "client.crt": kp.certPEM, "client.key": kp.keyPEM}); err != nil {
		return ClientAuthority{}, err
	}
	return ClientAuthority{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}, nil
}
