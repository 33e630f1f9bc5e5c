package deploy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestAFlagValueReplacesAValueFrom(t *testing.T) {
	c := &computev1alpha.SandboxContainer{Env: []computev1alpha.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &computev1alpha.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}
	if got := envText(c.Env[0]); got != "DB_PASSWORD from Secret db key password" {
		t.Errorf("envText() = %q; a plan must name the Secret and key, never a value", got)
	}
	applyEnv(c, []EnvChange{{Name: "DB_PASSWORD", Value: "local"}})
	want := []computev1alpha.EnvVar{{Name: "DB_PASSWORD", Value: "local"}}
	if diff := cmp.Diff(want, c.Env); diff != "" {
		t.Fatalf("applyEnv() mismatch (-want +got):\n%s", diff)
	}
}
