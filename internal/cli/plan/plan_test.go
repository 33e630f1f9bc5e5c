package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/clitest"
)

func TestCompute(t *testing.T) {
	base := clitest.NewWorkload("web").Env("MODE", "prod").Build()
	for name, tc := range map[string]struct {
		change       func(w *computev1alpha.Workload)
		want         []string
		wantTemplate bool
	}{
		"nothing changes": {change: func(*computev1alpha.Workload) {}},
		"a new image replaces instances": {
			change:       func(w *computev1alpha.Workload) { w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "img:2" },
			want:         []string{"~ image: ghcr.io/acme/web:1.0 → img:2"},
			wantTemplate: true,
		},
		"cities added, removed and rescaled": {
			change: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].CityCodes = []string{"DFW", "SIN"}
				w.Spec.Placements[0].ScaleSettings.MinReplicas = 1
			},
			want: []string{"~ city DFW: 2 → 1 instances", "- city LHR: its 2 instances are removed", "+ city SIN: 1 instance"},
		},
		"environment, ports and type are named": {
			change: func(w *computev1alpha.Workload) {
				c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
				c.Env = append(c.Env, computev1alpha.EnvVar{Name: "DEBUG", Value: "1"})
				c.Ports[0].Port = 9090
				w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-4"
			},
			want: []string{"~ instance type: datumcloud/d1-standard-2 → datumcloud/d1-standard-4",
				"+ env DEBUG: 1", "~ port http: 8080 → 9090"},
			wantTemplate: true,
		},
		"references name their Secret or ConfigMap, never a value": {
			change: addReferences,
			want: []string{"~ env MODE: prod → from ConfigMap web key mode (optional)", "+ mount secret-db: /etc/db",
				"+ image pull secret: regcred", "+ volume secret-db: Secret db"},
			wantTemplate: true,
		},
		"a restart is a template change": {
			change: func(w *computev1alpha.Workload) {
				w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "2026-06-01T12:00:00Z"}
			},
			want:         []string{"+ restarted at: 2026-06-01T12:00:00Z"},
			wantTemplate: true,
		},
		"placement settings": {
			change: func(w *computev1alpha.Workload) {
				w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To(int32(5))
				w.Spec.Placements[0].RolloutStrategy = &computev1alpha.RolloutStrategy{MaxUnavailable: ptr.To(int32(2))}
			},
			want: []string{"~ placement default: max replicas unset → 5", "~ placement default: max unavailable 1 → 2"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			after := base.DeepCopy()
			tc.change(after)
			p := Compute(&base.Spec, &after.Spec)
			var got []string
			for _, c := range p.Changes {
				got = append(got, c.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if p.TemplateChanged != tc.wantTemplate {
				t.Errorf("TemplateChanged = %v", p.TemplateChanged)
			}
			if p.Empty() != (len(tc.want) == 0) {
				t.Errorf("Empty = %v", p.Empty())
			}
		})
	}
	t.Run("a new workload counts its instances", func(t *testing.T) {
		p := Compute(nil, &base.Spec)
		if !p.New || p.Instances != 4 || p.Empty() {
			t.Errorf("got %+v", p)
		}
	})
}

// addReferences mounts Secret db, reads MODE from ConfigMap web and pulls
// with regcred.
func addReferences(w *computev1alpha.Workload) {
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "secret-db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	sb := spec.Runtime.Sandbox
	sb.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "regcred"}}
	c := &sb.Containers[0]
	c.Env[0] = computev1alpha.EnvVar{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "web"}, Key: "mode", Optional: ptr.To(true)}}}
	c.VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "secret-db", MountPath: ptr.To("/etc/db")}}
}
