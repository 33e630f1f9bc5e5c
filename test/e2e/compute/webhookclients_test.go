//go:build e2e

package compute

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// TestOnlyTheAPIServerIsAnsweredByTheWebhooks (#38 item 7): the
// management role's admission webhook server answers the project plane's
// kube-apiserver, which presents a client certificate of the webhook
// clients' CA (docs/install.md, "The webhook server's callers"), and
// nobody else: a caller without a certificate, or with a tenant's
// certificate of the plane's own CA, is refused at the handshake — while a
// write through the API server still gets the webhook's answer.
func TestOnlyTheAPIServerIsAnsweredByTheWebhooks(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	var configs admissionregistrationv1.ValidatingWebhookConfigurationList
	g.Expect(project.List(ctx, &configs)).To(Succeed())
	var url string
	for _, c := range configs.Items {
		for _, w := range c.Webhooks {
			if w.ClientConfig.URL != nil && strings.HasSuffix(w.Name, computev1alpha.GroupVersion.Group) {
				url = *w.ClientConfig.URL
			}
		}
	}
	g.Expect(url).NotTo(BeEmpty(), "no URL-registered compute webhook in the project plane")
	admin := local.Config(projectPlane)
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(admin.CAData)).To(BeTrue())
	tenantCfg, err := local.Environment().Plane(projectPlane).ClientConfig("tenant-mallory", "tenants")
	g.Expect(err).NotTo(HaveOccurred())

	call := func(cfg *rest.Config) error {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if cfg != nil {
			pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
			g.Expect(err).NotTo(HaveOccurred())
			tc.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`)))
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for who, cfg := range map[string]*rest.Config{"a caller without a certificate": nil, "a tenant with the plane's certificate": tenantCfg} {
		err := call(cfg)
		g.Expect(err).To(HaveOccurred(), "%s was answered by %s", who, url)
		t.Logf("%s: %v", who, err)
	}

	t.Log("through the API server, the webhook answers: a forged projection is refused by it")
	forged := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "forged", Labels: map[string]string{computev1alpha.ProjectionLabel: "true"},
	}, Spec: makeWorkload("default", "forged").withPlacement("edge", 1, "DFW").w.Spec.Template.Spec}
	err = project.Create(ctx, forged, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err) && strings.Contains(err.Error(), "read-only projection")).To(BeTrue(),
		"want the webhook's denial of a read-only projection, got %v", err)
}
