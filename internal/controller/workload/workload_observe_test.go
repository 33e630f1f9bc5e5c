package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

func TestDeploymentsOf(t *testing.T) {
	w := &computev1alpha.Workload{}
	w.Name, w.UID = "a-workload-with-a-name-longer-than-the-prefix", "w-uid"
	named := func(name string) computev1alpha.WorkloadDeployment {
		wd := computev1alpha.WorkloadDeployment{}
		wd.Name = name
		return wd
	}
	ownedByRef := named("renamed-1")
	ownedByRef.OwnerReferences = []metav1.OwnerReference{{Kind: "Workload", Name: w.Name, UID: w.UID, Controller: ptr.To(true)}}
	ownedBySpec := named("renamed-2")
	ownedBySpec.Spec.WorkloadRef.UID = w.UID
	labelled := named("renamed-3")
	labelled.Labels = map[string]string{computev1alpha.WorkloadUIDLabel: string(w.UID)}
	// A deployment of another Workload holding a name planned for w: a
	// conflict w must see.
	conflict := named(names.WorkloadDeploymentName(w.Name, w.UID, "edge", "DFW"))
	conflict.Spec.WorkloadRef.UID = "other-uid"
	other := named(names.WorkloadDeploymentName("another", "other-uid", "edge", "DFW"))
	other.Spec.WorkloadRef.UID = "other-uid"
	otherByRef := named("b-workload-dfw-12345678")
	otherByRef.OwnerReferences = []metav1.OwnerReference{{Kind: "Workload", Name: "b", UID: types.UID("b-uid"), Controller: ptr.To(true)}}

	tests := map[string]struct {
		all  []computev1alpha.WorkloadDeployment
		want []string
	}{
		"w's own deployments are kept however they say so": {
			all:  []computev1alpha.WorkloadDeployment{ownedByRef, ownedBySpec, labelled},
			want: []string{"renamed-1", "renamed-2", "renamed-3"},
		},
		"another Workload's deployment under a name planned for w is kept": {
			all:  []computev1alpha.WorkloadDeployment{conflict},
			want: []string{conflict.Name},
		},
		"other Workloads' deployments are left out": {
			all: []computev1alpha.WorkloadDeployment{other, otherByRef},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := deploymentsOf(w, tc.all)
			var gotNames []string
			for i := range got {
				gotNames = append(gotNames, got[i].Name)
			}
			if diff := cmp.Diff(tc.want, gotNames); diff != "" {
				t.Errorf("deploymentsOf() (-want +got):\n%s", diff)
			}
			// The listed objects are the cache's: what is returned must be
			// copies the reconcile may change.
			for i := range got {
				if got[i].Labels != nil {
					got[i].Labels["changed"] = "true"
				}
			}
			for i := range tc.all {
				if _, changed := tc.all[i].Labels["changed"]; changed {
					t.Errorf("deploymentsOf() shares %s's labels with the cache", tc.all[i].Name)
				}
			}
		})
	}
}

// TestDeploymentNamesBeginWithThePrefix: every name planned for a Workload
// begins with the prefix deploymentsOf keeps, whatever the Workload's name
// length.
func TestDeploymentNamesBeginWithThePrefix(t *testing.T) {
	for _, workload := range []string{"a", "web", "exactly-sixteen-", "a-name-of-forty-seven-characters-for-the-test-x", "a-name-of-sixty-three-characters-which-is-as-long-as-names-get-x", "ends-in-dashes-----------------------------------------------x"} {
		name := names.WorkloadDeploymentName(workload, "uid", "placement", "DFW")
		w := &computev1alpha.Workload{}
		w.Name, w.UID = workload, "another-uid"
		wd := computev1alpha.WorkloadDeployment{}
		wd.Name = name
		if got := deploymentsOf(w, []computev1alpha.WorkloadDeployment{wd}); len(got) != 1 {
			t.Errorf("the deployment %s of Workload %s is left out", name, workload)
		}
	}
}
