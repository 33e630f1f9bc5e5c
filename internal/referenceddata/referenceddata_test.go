package referenceddata

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

func spec() *computev1alpha.InstanceSpec {
	s := &computev1alpha.InstanceSpec{}
	s.Volumes = []computev1alpha.InstanceVolume{
		{Name: "a", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}},
		{Name: "b", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app", Optional: ptr.To(true)}},
	}
	s.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "c", Env: []computev1alpha.EnvVar{
			{Name: "X", Value: "literal"},
			{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}},
			{Name: "PW", ValueFrom: &computev1alpha.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw", Optional: ptr.To(true)}}},
		}, EnvFrom: []computev1alpha.EnvFromSource{
			{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "settings", Optional: ptr.To(true)}},
			{Prefix: "API_", SecretRef: &computev1alpha.SecretEnvSource{Name: "api"}},
		}}},
		ImagePullSecrets: []computev1alpha.LocalSecretReference{{Name: "regcred"}},
	}
	return s
}

func TestRefsAndTheirFields(t *testing.T) {
	want := []Ref{
		{Kind: KindConfigMap, Name: "app"}, {Kind: KindConfigMap, Name: "settings", Optional: true},
		{Kind: KindSecret, Name: "api"}, {Kind: KindSecret, Name: "db"}, {Kind: KindSecret, Name: "regcred"},
	}
	if diff := cmp.Diff(want, Refs(spec())); diff != "" {
		t.Errorf("Refs (-want +got):\n%s", diff)
	}
	var paths []string
	Visit(spec(), field.NewPath("spec"), func(kind, name string, _ bool, p *field.Path) {
		paths = append(paths, Token(kind, name)+" "+p.String())
	})
	wantPaths := []string{
		"Secret/db spec.volumes[0].secret.secretName",
		"ConfigMap/app spec.volumes[1].configMap.name",
		"ConfigMap/app spec.runtime.sandbox.containers[0].env[1].valueFrom.configMapKeyRef.name",
		"Secret/db spec.runtime.sandbox.containers[0].env[2].valueFrom.secretKeyRef.name",
		"ConfigMap/settings spec.runtime.sandbox.containers[0].envFrom[0].configMapRef.name",
		"Secret/api spec.runtime.sandbox.containers[0].envFrom[1].secretRef.name",
		"Secret/regcred spec.runtime.sandbox.imagePullSecrets[0].name",
	}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("Visit paths (-want +got):\n%s", diff)
	}
	onlyOptional := &computev1alpha.InstanceSpec{Volumes: []computev1alpha.InstanceVolume{{Name: "b",
		ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "x", Optional: ptr.To(true)}}}}
	if got := Refs(onlyOptional); len(got) != 1 || !got[0].Optional {
		t.Errorf("an object referenced only optionally = %+v, want Optional", got)
	}
}

func TestExpectedRoundTripsAndDecides(t *testing.T) {
	e := Expected{Resolved: true, Tokens: []string{"ConfigMap/app", "Secret/db"}, Hashes: map[string]string{"ConfigMap/app": "h1", "Secret/db": "h2"}}
	ann := e.Annotations()
	if ann[computev1alpha.ExpectedReferencedDataAnnotation] != `["ConfigMap/app","Secret/db"]` {
		t.Fatalf("annotation = %s, want Datum's JSON array of tokens", ann[computev1alpha.ExpectedReferencedDataAnnotation])
	}
	got := ExpectedOf(ann)
	if diff := cmp.Diff(e, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for name, tc := range map[string]struct {
		e       Expected
		present map[string]string
		ready   bool
		reason  string
	}{
		"not resolved yet":         {Expected{}, nil, false, computev1alpha.ReasonResolving},
		"a resolution error":       {Expected{Resolved: true, Error: "SourceNotFound: Secret db does not exist"}, nil, false, computev1alpha.ReasonSourceNotFound},
		"a companion missing":      {e, map[string]string{"configmap.app": "h1"}, false, computev1alpha.ReasonAwaitingPropagation},
		"a companion out of date":  {e, map[string]string{"configmap.app": "h1", "secret.db": "old"}, false, computev1alpha.ReasonAwaitingPropagation},
		"every companion at hash":  {e, map[string]string{"configmap.app": "h1", "secret.db": "h2"}, true, computev1alpha.ReasonReferencedDataReady},
		"nothing expected is done": {Expected{Resolved: true}, nil, true, computev1alpha.ReasonReferencedDataReady},
	} {
		t.Run(name, func(t *testing.T) {
			v := Decide(tc.e, tc.present)
			if v.Ready != tc.ready || v.Reason != tc.reason {
				t.Errorf("Decide = %+v, want ready %t reason %s", v, tc.ready, tc.reason)
			}
		})
	}
	if v := Decide(e, map[string]string{"configmap.app": "h1"}); v.Message != "waiting for 1 referenced object to reach this cell: Secret/db" {
		t.Errorf("message %q does not name what it waits for", v.Message)
	}
	if ExpectedOf(map[string]string{computev1alpha.ExpectedReferencedDataAnnotation: "not json"}).Resolved {
		t.Error("a malformed annotation counts as resolved")
	}
}

func TestSourceVersionFollowsTheObjectNotItsContent(t *testing.T) {
	a := SourceVersion("uid-1", "41")
	if a != SourceVersion("uid-1", "41") {
		t.Error("the version is not deterministic")
	}
	for _, other := range []string{SourceVersion("uid-1", "42"), SourceVersion("uid-2", "41"), SourceVersion("uid-14", "1")} {
		if other == a {
			t.Error("another write or another object, same version")
		}
	}
	if len(a) != 16 {
		t.Errorf("version %q: want 16 hex digits", a)
	}
}

func TestCompanionNames(t *testing.T) {
	if got := CompanionName(KindSecret, "db.creds"); got != "secret.db.creds" {
		t.Errorf("CompanionName = %s", got)
	}
	if got := CompanionNameOfToken("ConfigMap/app"); got != "configmap.app" {
		t.Errorf("CompanionNameOfToken = %s", got)
	}
	if got := CompanionNameOfToken("Pod/x"); got != "" {
		t.Errorf("a malformed token names %q", got)
	}
}
func TestMissingNamesTheCompanionsAbsentWhateverTheirHash(t *testing.T) {
	e := Expected{Resolved: true, Tokens: []string{"ConfigMap/app", "Secret/db", "Secret/tls"},
		Hashes: map[string]string{"ConfigMap/app": "h1", "Secret/db": "h2", "Secret/tls": "h3"}}
	tests := map[string]struct {
		present map[string]string
		want    []string
	}{
		"nothing present: all are missing, in token order": {want: []string{"ConfigMap/app", "Secret/db", "Secret/tls"}},
		"a companion at another hash is not missing":       {present: map[string]string{"configmap.app": "old", "secret.db": "h2", "secret.tls": ""}},
		"a ConfigMap named like a Secret's companion does not count for it": {
			present: map[string]string{"configmap.db": "h2", "configmap.app": "h1", "secret.tls": "h3"}, want: []string{"Secret/db"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Missing(e, tc.present)); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnExpectedSetHoldsOnlyForTheTemplateItWasResolvedFor(t *testing.T) {
	tpl := &computev1alpha.InstanceTemplateSpec{Spec: *spec()}
	e := ExpectedOf(Expected{Resolved: true, Tokens: []string{"Secret/db"}, TemplateHash: names.TemplateHash(tpl)}.Annotations())
	if !e.For(tpl) {
		t.Fatal("a set resolved for the template does not hold for it")
	}
	changed := tpl.DeepCopy()
	changed.Spec.Runtime.Sandbox.ImagePullSecrets = append(changed.Spec.Runtime.Sandbox.ImagePullSecrets, computev1alpha.LocalSecretReference{Name: "new"})
	if e.For(changed) {
		t.Error("a set resolved for the previous template holds for one that references something new")
	}
	if !Changed(Expected{TemplateHash: "a"}.Annotations(), Expected{TemplateHash: "b"}.Annotations()) {
		t.Error("a new template hash alone is not a change the cell hears of")
	}
}
