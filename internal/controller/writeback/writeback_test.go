package writeback

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/mirror"
)

// linkingLabels are the labels the cell stamps on an Instance.
func linkingLabels() map[string]string {
	return map[string]string{
		computev1alpha.WorkloadUIDLabel:            "w-uid",
		computev1alpha.WorkloadNameLabel:           "web",
		computev1alpha.WorkloadDeploymentUIDLabel:  "cell-wd-uid",
		computev1alpha.WorkloadDeploymentNameLabel: "web-dfw-1",
		computev1alpha.InstanceIndexLabel:          "0",
		computev1alpha.CityCodeLabel:               "DFW",
		computev1alpha.PlacementNameLabel:          "edge",
	}
}

func cellInstance() *computev1alpha.Instance {
	inst := &computev1alpha.Instance{}
	inst.Namespace, inst.Name, inst.UID, inst.ResourceVersion = "ns-1", "web-dfw-1-0", "cell-uid", "42"
	inst.Labels = linkingLabels()
	inst.Finalizers = []string{computev1alpha.InstanceFinalizer, "simulator.compute.datumapis.com/provider"}
	inst.OwnerReferences = []metav1.OwnerReference{{APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web-dfw-1", UID: "cell-wd-uid"}}
	inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: "h1"}
	inst.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAvailable}}
	return inst
}

func hubWD() *computev1alpha.WorkloadDeployment {
	wd := &computev1alpha.WorkloadDeployment{}
	wd.Namespace, wd.Name, wd.UID = "ns-1", "web-dfw-1", "hub-wd-uid"
	wd.Spec.CityCode = "DFW"
	return wd
}

func TestCopy(t *testing.T) {
	got := Copy(cellInstance(), hubWD())
	want := &computev1alpha.Instance{
		TypeMeta: metav1.TypeMeta{APIVersion: "compute.datumapis.com/v1alpha", Kind: "Instance"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-1",
			Name:      "web-dfw-1-0",
			Labels:    linkingLabels(),
			Annotations: map[string]string{
				computev1alpha.SourceUIDAnnotation:     "cell-uid",
				computev1alpha.SourceCreatedAnnotation: "0001-01-01T00:00:00Z",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web-dfw-1", UID: "hub-wd-uid",
				Controller: ptr.To(true),
			}},
		},
		Spec:   cellInstance().Spec,
		Status: cellInstance().Status,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Copy() mismatch (-want +got):\n%s", diff)
	}
}

func TestMerge(t *testing.T) {
	desired := Copy(cellInstance(), hubWD())
	tests := map[string]struct {
		existing    func() *computev1alpha.Instance
		wantChanged bool
		check       func(*testing.T, *computev1alpha.Instance)
	}{
		"an up-to-date copy is not written": {
			existing: func() *computev1alpha.Instance { return desired.DeepCopy() },
		},
		"a status difference is left to the status write": {
			existing: func() *computev1alpha.Instance {
				c := desired.DeepCopy()
				c.Status.Conditions = nil
				return c
			},
		},
		"labels set in the hub are kept and missing linking labels are added": {
			existing: func() *computev1alpha.Instance {
				c := desired.DeepCopy()
				delete(c.Labels, computev1alpha.PlacementNameLabel)
				c.Labels["hub.example/label"] = "kept"
				return c
			},
			wantChanged: true,
			check: func(t *testing.T, m *computev1alpha.Instance) {
				if m.Labels["hub.example/label"] != "kept" || m.Labels[computev1alpha.PlacementNameLabel] != "edge" {
					t.Errorf("labels = %v", m.Labels)
				}
			},
		},
		"a copy owned by an earlier hub deployment of the same name moves to the current one": {
			existing: func() *computev1alpha.Instance {
				c := desired.DeepCopy()
				c.OwnerReferences[0].UID = "gone"
				return c
			},
			wantChanged: true,
			check: func(t *testing.T, m *computev1alpha.Instance) {
				if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "hub-wd-uid" {
					t.Errorf("owners = %+v", m.OwnerReferences)
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

func TestOwnedBy(t *testing.T) {
	inst := Copy(cellInstance(), hubWD())
	cellWD := hubWD()
	other := hubWD()
	other.Spec.CityCode = "LHR"
	tests := map[string]struct {
		wd   *computev1alpha.WorkloadDeployment
		want bool
	}{
		"the cell running the deployment owns the copy":          {wd: cellWD, want: true},
		"a cell without the deployment does not":                 {wd: nil},
		"a deployment of the same name in another city does not": {wd: other},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ownedBy(inst, tc.wd); got != tc.want {
				t.Errorf("ownedBy() = %v, want %v", got, tc.want)
			}
		})
	}
}
