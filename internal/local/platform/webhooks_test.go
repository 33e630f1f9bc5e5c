//go:build linux

package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLocalWebhooksPointAtTheManagerOnLoopback(t *testing.T) {
	ca := []byte("CA")
	got, err := localWebhooks("https://127.0.0.1:9", ca, []string{"system:serviceaccount:compute-system:compute-manager"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, o := range got {
		names[o.GetKind()] = o.GetName()
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		if len(hooks) == 0 {
			t.Errorf("%s %s has no webhooks", o.GetKind(), o.GetName())
		}
		for _, h := range hooks {
			hook := h.(map[string]any)
			url, _, _ := unstructured.NestedString(hook, "clientConfig", "url")
			ca, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
			if len(url) <= len("https://127.0.0.1:9/") || url[:len("https://127.0.0.1:9/")] != "https://127.0.0.1:9/" || ca != "Q0E=" {
				t.Errorf("webhook %s points at %s with caBundle %q", hook["name"], url, ca)
			}
			if _, ok := hook["clientConfig"].(map[string]any)["service"]; ok {
				t.Errorf("webhook %s still names a Service", hook["name"])
			}
			// Only the projection guard leaves the manager's own requests out.
			conditions, _, _ := unstructured.NestedSlice(hook, "matchConditions")
			if hook["name"] != "projection.instances.compute.datumapis.com" {
				if len(conditions) > 0 {
					t.Errorf("webhook %s skips the manager's requests", hook["name"])
				}
				continue
			}
			want := []any{map[string]any{"name": "not-a-skipped-writer",
				"expression": `!(request.userInfo.username in ["system:serviceaccount:compute-system:compute-manager"])`}}
			if diff := cmp.Diff(want, conditions); diff != "" {
				t.Errorf("projection guard's matchConditions (-want +got):\n%s", diff)
			}
		}
	}
	want := map[string]string{
		"MutatingWebhookConfiguration":   "compute-mutating-webhook-configuration",
		"ValidatingWebhookConfiguration": "compute-validating-webhook-configuration",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("configurations (-want +got):\n%s", diff)
	}
}
