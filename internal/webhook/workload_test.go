package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func makeWorkload(image string) *computev1alpha.Workload {
	w := &computev1alpha.Workload{}
	w.Name, w.Namespace = "web", "default"
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: image}},
	}
	return w
}

func raw(t *testing.T, w *computev1alpha.Workload) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func TestDefaultRecordsWhoChangedTheTemplate(t *testing.T) {
	previous := makeWorkload("app:1")
	previous.Annotations = map[string]string{computev1alpha.TemplateChangedByAnnotation: "alice"}
	relabelled := previous.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	newImage := previous.DeepCopy()
	newImage.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "app:2"

	tests := map[string]struct {
		op       admissionv1.Operation
		old, new *computev1alpha.Workload
		want     string
	}{
		"a new Workload records its creator":               {op: admissionv1.Create, new: makeWorkload("app:1"), want: "bob"},
		"a new template records who changed it":            {op: admissionv1.Update, old: previous, new: newImage, want: "bob"},
		"a metadata change keeps who changed the template": {op: admissionv1.Update, old: previous, new: relabelled, want: "alice"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op, UserInfo: user("bob"), Object: raw(t, tc.new)}}
			if tc.old != nil {
				req.OldObject = raw(t, tc.old)
			}
			w := tc.new.DeepCopy()
			if err := (&workloadAdmission{}).Default(admission.NewContextWithRequest(context.Background(), req), w); err != nil {
				t.Fatalf("Default() error = %v", err)
			}
			if got := w.Annotations[computev1alpha.TemplateChangedByAnnotation]; got != tc.want {
				t.Fatalf("template-changed-by = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfigurationsMatchTheGeneratedManifests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatalf("failed to read the generated manifests: %v", err)
	}
	var generated []hook
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj struct {
			Kind     string                                      `json:"kind"`
			Webhooks []admissionregistrationv1.ValidatingWebhook `json:"webhooks"`
		}
		if err := dec.Decode(&obj); err != nil {
			break
		}
		for _, w := range obj.Webhooks {
			generated = append(generated, hookOf(obj.Kind == "MutatingWebhookConfiguration", w.Name, *w.ClientConfig.Service.Path, w.Rules, *w.FailurePolicy))
		}
	}

	mutating, validating := Configurations(ClientConfig{URL: "https://127.0.0.1:9443"})
	var built []hook
	for _, w := range mutating.Webhooks {
		built = append(built, hookOf(true, w.Name, (*w.ClientConfig.URL)[len("https://127.0.0.1:9443"):], w.Rules, *w.FailurePolicy))
	}
	for _, w := range validating.Webhooks {
		built = append(built, hookOf(false, w.Name, (*w.ClientConfig.URL)[len("https://127.0.0.1:9443"):], w.Rules, *w.FailurePolicy))
	}
	sortHooks(generated)
	sortHooks(built)
	if diff := cmp.Diff(generated, built); diff != "" {
		t.Fatalf("Configurations() drifted from config/webhook/manifests.yaml (-generated +built):\n%s", diff)
	}
}

// hook is what must agree between generated and built configurations.
type hook struct {
	Mutating      bool
	Name, Path    string
	Operations    []admissionregistrationv1.OperationType
	Resources     []string
	FailurePolicy admissionregistrationv1.FailurePolicyType
}

func hookOf(mutating bool, name, path string, rules []admissionregistrationv1.RuleWithOperations, fp admissionregistrationv1.FailurePolicyType) hook {
	h := hook{Mutating: mutating, Name: name, Path: path, FailurePolicy: fp}
	for _, r := range rules {
		h.Operations = append(h.Operations, r.Operations...)
		h.Resources = append(h.Resources, r.Resources...)
	}
	return h
}

func sortHooks(hs []hook) {
	slices.SortFunc(hs, func(a, b hook) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}

func TestClusterPathsCarryTheCluster(t *testing.T) {
	_, validating := Configurations(ClientConfig{URL: "https://manager:9443/", Cluster: "project-a"})
	got := *validating.Webhooks[0].ClientConfig.URL
	want := "https://manager:9443/clusters/project-a" + ValidateWorkloadPath
	if got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
}

func TestTheManagerCanSkipTheProjectionGuard(t *testing.T) {
	_, validating := Configurations(ClientConfig{URL: "https://manager:9443/"})
	for _, h := range validating.Webhooks {
		if len(h.MatchConditions) > 0 {
			t.Fatalf("webhook %s has match conditions without writers to skip: %v", h.Name, h.MatchConditions)
		}
	}
	_, validating = Configurations(ClientConfig{URL: "https://manager:9443/", SkipProjectionWriters: []string{"system:serviceaccount:compute-system:compute-manager", `odd"name`}})
	for _, h := range validating.Webhooks {
		want := 0
		if h.Name == "projection.instances.compute.datumapis.com" {
			want = 1
		}
		if len(h.MatchConditions) != want {
			t.Fatalf("webhook %s has %d match conditions, want %d", h.Name, len(h.MatchConditions), want)
		}
		if want == 1 {
			got := h.MatchConditions[0].Expression
			if wantExpr := `!(request.userInfo.username in ["system:serviceaccount:compute-system:compute-manager", "odd\"name"])`; got != wantExpr {
				t.Fatalf("expression = %s, want %s", got, wantExpr)
			}
		}
	}
}
