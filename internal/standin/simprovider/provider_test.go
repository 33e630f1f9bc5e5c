package simprovider

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestExpectedDataChanged(t *testing.T) {
	wd := func(expected string, replicas int32) *computev1alpha.WorkloadDeployment {
		d := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		if expected != "" {
			d.Annotations = map[string]string{computev1alpha.ExpectedReferencedDataAnnotation: expected}
		}
		d.Status.Replicas = replicas
		return d
	}
	cases := map[string]struct {
		old, new *computev1alpha.WorkloadDeployment
		want     bool
	}{
		"a status write alone does not bring the Instances back":   {old: wd("", 1), new: wd("", 2), want: false},
		"the expected data resolved brings them back":              {old: wd("", 1), new: wd(`["Secret/db"]`, 1), want: true},
		"a changed list of expected companions brings them back":   {old: wd(`["Secret/db"]`, 1), new: wd(`["ConfigMap/cfg","Secret/db"]`, 1), want: true},
		"an unchanged list with a status write brings nobody back": {old: wd(`["Secret/db"]`, 1), new: wd(`["Secret/db"]`, 3), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := expectedDataChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}
	if !expectedDataChanged.Create(event.CreateEvent{Object: wd("", 0)}) || !expectedDataChanged.Delete(event.DeleteEvent{Object: wd("", 0)}) {
		t.Error("creates and deletes of WorkloadDeployments must pass")
	}
}

func TestAPlacedInstanceIsNotCheckedForCompanions(t *testing.T) {
	r := &Reconciler{}
	// No client: a placed Instance must not read anything.
	got, err := r.missingCompanions(t.Context(), &makeInst().programmed().i)
	if err != nil || got != nil {
		t.Errorf("missingCompanions of a placed Instance = %v, %v; want nothing", got, err)
	}
}
