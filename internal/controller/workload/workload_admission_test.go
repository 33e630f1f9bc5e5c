package workload

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/citycells/compute/internal/webhook"
)

// TestAdmissionEnforcedOnlyByComputesWebhookFailingClosed: compute's own
// configuration (webhook.Configurations) enforces admission; none, another
// webhook, one that fails open, or one that skips updates do not, and the
// answer says which.
func TestAdmissionEnforcedOnlyByComputesWebhookFailingClosed(t *testing.T) {
	compute := func(change func(*admissionregistrationv1.ValidatingWebhook)) []admissionregistrationv1.ValidatingWebhookConfiguration {
		_, v := webhook.Configurations(webhook.ClientConfig{URL: "https://127.0.0.1:9443"})
		for i := range v.Webhooks {
			if v.Webhooks[i].Name == workloadWebhook && change != nil {
				change(&v.Webhooks[i])
			}
		}
		return []admissionregistrationv1.ValidatingWebhookConfiguration{*v}
	}
	ignore := admissionregistrationv1.Ignore
	for name, tc := range map[string]struct {
		configs  []admissionregistrationv1.ValidatingWebhookConfiguration
		enforced bool
		why      string
	}{
		"compute's configuration": {configs: compute(nil), enforced: true},
		"none":                    {why: "no ValidatingWebhookConfiguration holds"},
		"another webhook":         {configs: compute(func(wh *admissionregistrationv1.ValidatingWebhook) { wh.Name = "other.example.com" }), why: "no ValidatingWebhookConfiguration holds"},
		"failing open": {configs: compute(func(wh *admissionregistrationv1.ValidatingWebhook) { wh.FailurePolicy = &ignore }),
			why: "failurePolicy Ignore"},
		"creates only": {configs: compute(func(wh *admissionregistrationv1.ValidatingWebhook) {
			wh.Rules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		}), why: "does not send the creates and updates"},
		"another resource": {configs: compute(func(wh *admissionregistrationv1.ValidatingWebhook) {
			wh.Rules[0].Resources = []string{"instances"}
		}), why: "does not send the creates and updates"},
	} {
		t.Run(name, func(t *testing.T) {
			enforced, why := enforcedBy(tc.configs)
			if enforced != tc.enforced || !strings.Contains(why, tc.why) {
				t.Fatalf("enforcedBy = %v, %q; want %v, %q", enforced, why, tc.enforced, tc.why)
			}
		})
	}
}
