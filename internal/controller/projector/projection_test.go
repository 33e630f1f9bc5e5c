package projector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/mirror"
)

// hubInstance builds a written-back Instance in hub namespace ns-1.
func hubInstance() *computev1alpha.Instance {
	inst := &computev1alpha.Instance{}
	inst.Namespace, inst.Name, inst.UID = "ns-1", "web-dfw-1-0", "hub-uid"
	inst.Labels = map[string]string{
		computev1alpha.WorkloadDeploymentNameLabel: "web-dfw-1",
		computev1alpha.CityCodeLabel:               "DFW",
		computev1alpha.InstanceIndexLabel:          "0",
	}
	inst.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "now"}
	inst.OwnerReferences = []metav1.OwnerReference{{APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web-dfw-1", UID: "hub-wd"}}
	inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: "h1"}
	inst.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAvailable}}
	return inst
}

// mappedNamespace is hub namespace ns-1 mapped to default of cluster org/proj.
func mappedNamespace() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-1", Labels: map[string]string{
		computev1alpha.UpstreamClusterNameLabel: "cluster-org_proj",
		computev1alpha.UpstreamNamespaceLabel:   "default",
	}}}
}

func projectWD() *computev1alpha.WorkloadDeployment {
	wd := &computev1alpha.WorkloadDeployment{}
	wd.Namespace, wd.Name, wd.UID = "default", "web-dfw-1", "project-wd"
	return wd
}

func TestResolve(t *testing.T) {
	tests := map[string]struct {
		inst       func(*computev1alpha.Instance)
		ns         func(*corev1.Namespace) *corev1.Namespace
		want       identity
		wantReason string
	}{
		"a written-back Instance resolves to its project cluster, namespace and deployment": {
			want: identity{cluster: "org/proj", namespace: "default", deployment: "web-dfw-1"},
		},
		"a namespace compute does not map is unresolvable": {
			ns:         func(*corev1.Namespace) *corev1.Namespace { return nil },
			wantReason: ReasonNamespaceNotMapped,
		},
		"a namespace without the project namespace label is unresolvable": {
			ns: func(n *corev1.Namespace) *corev1.Namespace {
				delete(n.Labels, computev1alpha.UpstreamNamespaceLabel)
				return n
			},
			wantReason: ReasonNamespaceNotMapped,
		},
		"a cluster label without its prefix is unresolvable, never the host cluster": {
			ns: func(n *corev1.Namespace) *corev1.Namespace {
				n.Labels[computev1alpha.UpstreamClusterNameLabel] = "org_proj"
				return n
			},
			wantReason: ReasonNamespaceNotMapped,
		},
		"an Instance without its deployment label is unresolvable": {
			inst:       func(i *computev1alpha.Instance) { delete(i.Labels, computev1alpha.WorkloadDeploymentNameLabel) },
			wantReason: ReasonDeploymentUnlabelled,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inst, ns := hubInstance(), mappedNamespace()
			if tc.inst != nil {
				tc.inst(inst)
			}
			if tc.ns != nil {
				ns = tc.ns(ns)
			}
			got, reason, message := resolve(inst, ns)
			if reason != tc.wantReason {
				t.Fatalf("reason = %q (%s), want %q", reason, message, tc.wantReason)
			}
			if reason != "" && message == "" {
				t.Error("an unresolvable identity has no message")
			}
			if got != tc.want {
				t.Errorf("identity = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestProjection(t *testing.T) {
	got := Projection(hubInstance(), "default", projectWD())
	want := &computev1alpha.Instance{
		TypeMeta: metav1.TypeMeta{APIVersion: "compute.datumapis.com/v1alpha", Kind: "Instance"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web-dfw-1-0",
			Namespace: "default",
			Labels: map[string]string{
				computev1alpha.WorkloadDeploymentNameLabel: "web-dfw-1",
				computev1alpha.CityCodeLabel:               "DFW",
				computev1alpha.InstanceIndexLabel:          "0",
				computev1alpha.ProjectionLabel:             "true",
			},
			Annotations: map[string]string{computev1alpha.RestartedAtAnnotation: "now"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web-dfw-1", UID: "project-wd",
				Controller: ptr.To(true),
			}},
		},
		Spec:   hubInstance().Spec,
		Status: hubInstance().Status,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Projection() mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeProjection(t *testing.T) {
	desired := Projection(hubInstance(), "default", projectWD())
	tests := map[string]struct {
		existing    func() *computev1alpha.Instance
		wantChanged bool
		check       func(*testing.T, *computev1alpha.Instance)
	}{
		"an up-to-date projection is left alone": {
			existing: func() *computev1alpha.Instance { return desired.DeepCopy() },
		},
		"a status difference is left to the status write": {
			existing: func() *computev1alpha.Instance {
				p := desired.DeepCopy()
				p.Status = computev1alpha.InstanceStatus{}
				return p
			},
		},
		"an owner from an earlier deployment of the same name is replaced": {
			existing: func() *computev1alpha.Instance {
				p := desired.DeepCopy()
				p.OwnerReferences[0].UID = "old"
				return p
			},
			wantChanged: true,
			check: func(t *testing.T, m *computev1alpha.Instance) {
				if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "project-wd" {
					t.Errorf("owners = %+v", m.OwnerReferences)
				}
			},
		},
		"labels others set are kept, a new template hash is taken": {
			existing: func() *computev1alpha.Instance {
				p := desired.DeepCopy()
				p.Labels["team"] = "a"
				p.Spec.Controller.TemplateHash = "h0"
				return p
			},
			wantChanged: true,
			check: func(t *testing.T, m *computev1alpha.Instance) {
				if m.Labels["team"] != "a" || m.Spec.Controller.TemplateHash != "h1" {
					t.Errorf("labels %v, template hash %s", m.Labels, m.Spec.Controller.TemplateHash)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			merged, changed := mirror.MergeInstance(tc.existing(), desired)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if tc.check != nil {
				tc.check(t, merged)
			}
		})
	}
}

func TestOwnerWaitAfter(t *testing.T) {
	if got := ownerWaitAfter(10 * time.Second); got != 2*time.Second {
		t.Errorf("a young Instance waits %s, want 2s", got)
	}
	if got := ownerWaitAfter(5 * time.Minute); got != 30*time.Second {
		t.Errorf("an old Instance waits %s, want 30s", got)
	}
}

func TestLatestTransition(t *testing.T) {
	a := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := metav1.NewTime(a.Add(time.Minute))
	got := latestTransition([]metav1.Condition{{Type: "A", LastTransitionTime: b}, {Type: "B", LastTransitionTime: a}})
	if !got.Equal(&b) {
		t.Errorf("latestTransition() = %s, want %s", got, b)
	}
}
