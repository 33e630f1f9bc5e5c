package references

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestRequired(t *testing.T) {
	spec := &computev1alpha.InstanceSpec{
		Runtime: computev1alpha.InstanceRuntimeSpec{Sandbox: &computev1alpha.SandboxRuntime{
			Containers: []computev1alpha.SandboxContainer{{Name: "app", Env: []computev1alpha.EnvVar{
				{Name: "A", Value: "literal"},
				{Name: "B", ValueFrom: &computev1alpha.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
				{Name: "C", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "x", Optional: ptr.To(true)}}},
			}}},
			ImagePullSecrets: []computev1alpha.LocalSecretReference{{Name: "registry"}},
		}},
		Volumes: []computev1alpha.InstanceVolume{
			{Name: "a", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}},
			{Name: "b", Secret: &computev1alpha.SecretVolumeSource{Name: "legacy"}},
			{Name: "c", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app"}},
			{Name: "d", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "maybe", Optional: ptr.To(true)}},
		},
	}
	want := []Reference{{KindConfigMap, "app"}, {KindSecret, "db"}, {KindSecret, "legacy"}, {KindSecret, "registry"}}
	if diff := cmp.Diff(want, Required(spec)); diff != "" {
		t.Fatalf("Required() mismatch (-want +got):\n%s", diff)
	}
}

func TestFormatAndParse(t *testing.T) {
	tests := map[string]struct {
		value string
		want  []Reference
	}{
		"nothing missing is empty":      {"", nil},
		"kinds and names round-trip":    {"ConfigMap/app,Secret/db", []Reference{{KindConfigMap, "app"}, {KindSecret, "db"}}},
		"malformed entries are skipped": {"Pod/x,Secret/,nothing,Secret/db", []Reference{{KindSecret, "db"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Parse(tc.value)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Parse(%q) mismatch (-want +got):\n%s", tc.value, diff)
			}
			if name != "malformed entries are skipped" && Format(got) != tc.value {
				t.Fatalf("Format(Parse(%q)) = %q", tc.value, Format(got))
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("ConfigMap/app,Secret/db")
	f.Add(",,/,Secret//x")
	f.Fuzz(func(t *testing.T, value string) {
		refs := Parse(value)
		if diff := cmp.Diff(refs, Parse(Format(refs))); diff != "" {
			t.Fatalf("Parse(Format(Parse(%q))) changed the references:\n%s", value, diff)
		}
	})
}
