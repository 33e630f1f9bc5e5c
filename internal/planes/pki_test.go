package planes

import (
	"crypto/x509"
	"net"
	"testing"

	. "github.com/onsi/gomega"
)

// TestServingCertificate checks the names a serving certificate is valid
// for and that it chains to its CA.
func TestServingCertificate(t *testing.T) {
	g := NewWithT(t)
	ca, err := newAuthority("test-ca")
	g.Expect(err).NotTo(HaveOccurred())
	kp, err := ca.serving("kube-apiserver-cell", "cell.example.test", "192.0.2.10")
	g.Expect(err).NotTo(HaveOccurred())

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "cell.example.test", "192.0.2.10"} {
		_, err := kp.cert.Verify(x509.VerifyOptions{
			DNSName:   name,
			Roots:     roots,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}
	g.Expect(kp.cert.IPAddresses).To(ContainElement(Satisfy(func(ip net.IP) bool { return ip.Equal(net.ParseIP("192.0.2.10")) })))
	g.Expect(kp.cert.VerifyHostname("elsewhere.example.test")).NotTo(Succeed())
}

// TestClientCertificate checks the identity Kubernetes reads from a client
// certificate: user from CN, groups from O.
func TestClientCertificate(t *testing.T) {
	g := NewWithT(t)
	ca, err := newAuthority("test-ca")
	g.Expect(err).NotTo(HaveOccurred())
	kp, err := ca.client("jane", "developers", "auditors")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kp.cert.Subject.CommonName).To(Equal("jane"))
	g.Expect(kp.cert.Subject.Organization).To(ConsistOf("developers", "auditors"))

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	_, err = kp.cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = ca.client("")
	g.Expect(err).To(HaveOccurred())
}
