package simprovider

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestMissingReferencesChanged(t *testing.T) {
	wd := func(missing string, replicas int32) *computev1alpha.WorkloadDeployment {
		d := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		if missing != "" {
			d.Annotations = map[string]string{computev1alpha.MissingReferencesAnnotation: missing}
		}
		d.Status.Replicas = replicas
		return d
	}
	cases := map[string]struct {
		old, new *computev1alpha.WorkloadDeployment
		want     bool
	}{
		"a status write alone does not bring the Instances back": {old: wd("", 1), new: wd("", 2), want: false},
		"a reference reported missing brings them back":          {old: wd("", 1), new: wd("Secret/db", 1), want: true},
		"a missing reference found brings them back":             {old: wd("Secret/db", 1), new: wd("", 1), want: true},
		"a changed list of missing references brings them back":  {old: wd("Secret/db", 1), new: wd("Secret/db,ConfigMap/cfg", 1), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := missingReferencesChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}
	if !missingReferencesChanged.Create(event.CreateEvent{Object: wd("", 0)}) || !missingReferencesChanged.Delete(event.DeleteEvent{Object: wd("", 0)}) {
		t.Error("creates and deletes of WorkloadDeployments must pass")
	}
}
