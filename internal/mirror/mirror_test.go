package mirror

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestMergeMaps(t *testing.T) {
	tests := map[string]struct {
		base, over, want map[string]string
	}{
		"nothing to set returns the base":       {base: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
		"entries are set over the base":         {base: map[string]string{"a": "1", "b": "2"}, over: map[string]string{"b": "3"}, want: map[string]string{"a": "1", "b": "3"}},
		"other writers' keys are kept":          {base: map[string]string{"karmada.io/x": "y"}, over: map[string]string{"a": "1"}, want: map[string]string{"karmada.io/x": "y", "a": "1"}},
		"a nil base becomes the entries to set": {over: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := map[string]string{}
			for k, v := range tc.base {
				before[k] = v
			}
			got := MergeMaps(tc.base, tc.over)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("MergeMaps() mismatch (-want +got):\n%s", diff)
			}
			if tc.base != nil {
				if diff := cmp.Diff(before, tc.base); diff != "" {
					t.Fatalf("MergeMaps() modified its base:\n%s", diff)
				}
			}
		})
	}
}

func TestReplacedWhenTheCellRecreatedTheInstance(t *testing.T) {
	withSource := func(uid string) *computev1alpha.Instance {
		inst := &computev1alpha.Instance{}
		if uid != "" {
			StampSource(inst, &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}})
		}
		return inst
	}
	tests := map[string]struct {
		existing, desired string
		want              bool
	}{
		"the same cell Instance is updated":                       {existing: "a", desired: "a"},
		"a recreated cell Instance replaces the copy":             {existing: "a", desired: "b", want: true},
		"a copy made before sources were recorded is updated":     {existing: "", desired: "b"},
		"a desired copy without a source never replaces anything": {existing: "a", desired: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Replaced(withSource(tc.existing), withSource(tc.desired)); got != tc.want {
				t.Fatalf("Replaced() = %v, want %v", got, tc.want)
			}
		})
	}
}
