//go:build linux

package platform

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/citycells/compute/internal/planes"
)

// webhookClientUser is the user of the client certificate the project
// planes' kube-apiservers present to compute's admission webhooks.
const webhookClientUser = "kube-apiserver-webhook-client"

// flagWebhookClientCAFile is compute-manager's flag naming the CA its
// webhook server requires of its callers.
const flagWebhookClientCAFile = "webhook-client-ca-file"

// writeWebhookClients makes the project planes' kube-apiservers present a
// client certificate to compute's admission webhooks, of a CA of its own
// (not the planes' CA, which signs every user's certificate), so the
// management role's webhook server can answer them and nobody else
// (docs/install.md, "The webhook server's callers"). It writes the CA, the
// certificate, the kubeconfig of the API servers' webhook calls (one user,
// "*": every webhook) and the AdmissionConfiguration naming it, and returns
// the kube-apiserver flags that load it.
func (p *Platform) writeWebhookClients() (map[string]string, error) {
	dir := filepath.Join(p.cfg.StateDir, "webhook-clients")
	ca, err := planes.WriteClientAuthority(dir, "compute-webhook-clients-ca", webhookClientUser)
	if err != nil {
		return nil, fmt.Errorf("failed to make the webhook clients' certificate: %w", err)
	}
	p.webhookClientCA = ca.CAFile
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, ca.CertFile, ca.KeyFile), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write %s: %w", kubeconfig, err)
	}
	admission := filepath.Join(dir, "admission.yaml")
	plugin := func(name string) string {
		return fmt.Sprintf(`- name: %s
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, name, kubeconfig)
	}
	if err := os.WriteFile(admission, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+
		plugin("ValidatingAdmissionWebhook")+plugin("MutatingAdmissionWebhook")), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write %s: %w", admission, err)
	}
	return map[string]string{"admission-control-config-file": admission}, nil
}
