package mirror

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
