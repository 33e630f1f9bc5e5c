package suspend

import (
	"testing"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestPatchSuspendsAndResumes(t *testing.T) {
	for name, tc := range map[string]struct {
		resume bool
		want   string
	}{
		"suspend sets the annotation":   {false, `{"metadata":{"annotations":{"compute.datumapis.com/suspended":"true"}}}`},
		"resume removes the annotation": {true, `{"metadata":{"annotations":{"compute.datumapis.com/suspended":null}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Patch(tc.resume)
			if err != nil || string(got) != tc.want {
				t.Fatalf("Patch() = %s, %v; want %s", got, err, tc.want)
			}
			start := clitest.NewWorkload("web").Build()
			if tc.resume {
				start.Annotations = map[string]string{computev1alpha.SuspendedAnnotation: computev1alpha.SuspendedAnnotationValue}
			}
			w, err := cmdutil.MergePatched(start, got)
			if err != nil {
				t.Fatal(err)
			}
			if computev1alpha.IsSuspended(w.Annotations) == tc.resume {
				t.Errorf("the patch leaves annotations %v", w.Annotations)
			}
		})
	}
}
