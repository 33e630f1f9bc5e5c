package quota

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestTargetFromNamespace(t *testing.T) {
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-1", Labels: labels}}
	}
	tests := map[string]struct {
		ns      *corev1.Namespace
		want    Target
		wantErr bool
	}{
		"a bare project cluster name is the project": {
			ns:   ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-p1", computev1alpha.UpstreamNamespaceLabel: "default"}),
			want: Target{Project: "p1", Namespace: "default"},
		},
		"an org/project cluster name yields the bare project, as Milo keys projects": {
			ns:   ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-acme_p1", computev1alpha.UpstreamNamespaceLabel: "web"}),
			want: Target{Project: "p1", Namespace: "web"},
		},
		"a namespace without the cluster label is unresolvable": {
			ns: ns(map[string]string{computev1alpha.UpstreamNamespaceLabel: "default"}), wantErr: true,
		},
		"a namespace without the upstream namespace label is unresolvable": {
			ns: ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-p1"}), wantErr: true,
		},
		"a cluster label without the cluster- prefix is unresolvable": {
			ns: ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "p1", computev1alpha.UpstreamNamespaceLabel: "default"}), wantErr: true,
		},
		"a cluster label ending in a slash names no project": {
			ns: ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-acme_", computev1alpha.UpstreamNamespaceLabel: "default"}), wantErr: true,
		},
		"an upstream namespace that is not a namespace name is unresolvable": {
			ns: ns(map[string]string{computev1alpha.UpstreamClusterNameLabel: "cluster-p1", computev1alpha.UpstreamNamespaceLabel: "Not_A_Name"}), wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := TargetFromNamespace(tc.ns)
			if tc.wantErr {
				if !errors.Is(err, ErrProjectUnresolvable) {
					t.Fatalf("error = %v, want ErrProjectUnresolvable", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("TargetFromNamespace() = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestMiloControlPlaneHost(t *testing.T) {
	tests := map[string]struct {
		base, want string
	}{
		"a bare host gets the project path": {base: "https://api.datum.net", want: "https://api.datum.net/apis/resourcemanager.miloapis.com/v1alpha1/projects/p1/control-plane"},
		"a trailing slash is not doubled":   {base: "https://api.datum.net/", want: "https://api.datum.net/apis/resourcemanager.miloapis.com/v1alpha1/projects/p1/control-plane"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MiloControlPlaneHost(tc.base, "p1"); got != tc.want {
				t.Errorf("MiloControlPlaneHost() = %q, want %q", got, tc.want)
			}
		})
	}
}
