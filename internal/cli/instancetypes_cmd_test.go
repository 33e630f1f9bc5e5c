package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// createInstanceType creates an InstanceType called name in h's plane with
// phase and replacement, labelled with the test's namespace (the catalog
// is cluster-scoped and the plane shared), and deletes it when the test
// ends. The planes of these tests run no webhook: the type is stored as
// given.
func createInstanceType(t *testing.T, h *clitest.Harness, name string, phase computev1alpha.InstanceTypeLifecyclePhase, replacement string) *computev1alpha.InstanceType {
	t.Helper()
	it := &computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"cli-test": h.Namespace}},
		Spec: computev1alpha.InstanceTypeSpec{
			DisplayName: "Test " + name,
			Resources:   computev1alpha.InstanceTypeResources{CPU: resource.MustParse("500m"), Memory: resource.MustParse("1Gi")},
			Lifecycle:   computev1alpha.InstanceTypeLifecycle{Phase: phase, ReplacementInstanceType: replacement},
		},
	}
	if err := h.Client.Create(context.Background(), it); err != nil {
		t.Fatalf("failed to create InstanceType %s: %v", name, err)
	}
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), it) })
	return it
}

func TestInstanceTypesListsTheCatalog(t *testing.T) {
	t.Parallel()
	h := harness(t)

	res := h.Run(main, clitest.RunOptions{Terminal: true, Width: 160}, "instance-types")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("want a header and Datum's four standard types, got:\n%s", res.Stdout)
	}
	mustContain(t, "instance-types", res.Stdout, "PHASE", "CPU", "MEMORY", "REPLACEMENT")
	if !strings.HasPrefix(lines[1], "datumcloud-d1-standard-2 ") || !strings.Contains(lines[1], "Active") || !strings.Contains(lines[1], "2Gi") {
		t.Errorf("the smallest Active type comes first with its size: %q", lines[1])
	}
	mustContain(t, "instance-types summary", res.Stderr, "a workload that names none gets datumcloud-d1-standard-2")

	// A retired type shows its phase and replacement; -l finds it alone.
	name := "cli-retired-" + h.Namespace
	createInstanceType(t, h, name, computev1alpha.InstanceTypePhaseDisabled, "datumcloud-d1-standard-2")
	sel := "cli-test=" + h.Namespace
	piped := h.Run(main, clitest.RunOptions{}, "instance-types", "-l", sel)
	if want := name + "\tDisabled\t500m\t1Gi\tdatumcloud-d1-standard-2\n"; piped.Code != 0 || cells(piped.Stdout) != "NAME\tPHASE\tCPU\tMEMORY\tREPLACEMENT\n"+want {
		t.Errorf("a pipe gets the selected type as an aligned table, got exit %d:\n%s%s", piped.Code, piped.Stdout, piped.Stderr)
	}
	wide := h.Run(main, clitest.RunOptions{Terminal: true, Width: 200}, "instance-types", "-l", sel, "-o", "wide")
	mustContain(t, "instance-types -o wide", wide.Stdout, "DISPLAY-NAME", "ALSO-ACCEPTED", "READY", "DEPRECATED", "Test "+name)

	for _, format := range []string{"json", "yaml"} {
		doc := h.Run(main, clitest.RunOptions{}, "instance-types", "-l", sel, "-o", format)
		mustContain(t, "instance-types -o "+format, doc.Stdout, "InstanceTypeList", name, "replacementInstanceType", "Disabled")
	}
	named := h.Run(main, clitest.RunOptions{}, "instance-types", "-l", sel, "-o", "name")
	if got, want := named.Stdout, "instancetype.compute.datumapis.com/"+name+"\n"; got != want {
		t.Errorf("-o name = %q, want %q", got, want)
	}

	none := h.Run(main, clitest.RunOptions{}, "instance-types", "-l", "cli-test=nothing-"+h.Namespace)
	if none.Code != 0 || none.Stdout != "" || !strings.Contains(none.Stderr, "No instance types found matching cli-test=nothing-") {
		t.Errorf("an empty selection says so on stderr only: %+v", none)
	}
	bad := h.Run(main, clitest.RunOptions{}, "instance-types", "-o", "csv")
	if bad.Code != cmdutil.ExitUsage {
		t.Errorf("an unknown format is a usage error, got %+v", bad)
	}
}

func TestStatusShowsADeprecatedInstanceType(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	name := "cli-aging-" + h.Namespace
	it := createInstanceType(t, h.Harness, name, computev1alpha.InstanceTypePhaseActive, "")
	w := clitest.NewWorkload("web").Placement("default", 1, "DFW").Build()
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = name
	h.CreateWorkload(w)
	h.WaitRolledOut("web")

	// The InstanceType controller writes the status meanwhile: patch.
	deprecate := client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"lifecycle":{"phase":"Deprecated","replacementInstanceType":"datumcloud-d1-standard-4"}}}`))
	if err := h.Client.Patch(context.Background(), it, deprecate); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Type:      InstanceType '%s' is deprecated; please migrate to 'datumcloud-d1-standard-4'.", name)
	var res clitest.Result
	h.Eventually("the workload reports its deprecated type", func(context.Context) error {
		res = h.Run(main, clitest.RunOptions{Terminal: true, Width: 200}, "status", "web")
		if !strings.Contains(res.Stdout, want) {
			return fmt.Errorf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
		return nil
	})
	// The running workload is not disturbed.
	mustContain(t, "status", res.Stdout, "Healthy")
	js := h.Run(main, clitest.RunOptions{}, "status", "web", "-o", "json")
	mustContain(t, "status -o json", js.Stdout, `"instanceType": {`, `"reason": "InstanceTypeDeprecated"`)
}
