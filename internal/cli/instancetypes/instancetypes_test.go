package instancetypes

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// InstanceType controller writes; no controller runs. The command test in
// internal/cli runs on a real API server.)
// fixture is Datum's standard types with standard-8 deprecated for a week
// in favour of standard-16, and a retired type.
func fixture() []computev1alpha.InstanceType {
	types := apitest.StandardInstanceTypes()
	for i := range types {
		it := &types[i]
		it.Status.Conditions = []metav1.Condition{{Type: computev1alpha.InstanceTypeConditionReady, Status: metav1.ConditionTrue, Reason: computev1alpha.InstanceTypeReasonValid}}
		if it.Name == "datumcloud-d1-standard-8" {
			it.Spec.Lifecycle = computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseDeprecated, ReplacementInstanceType: "datumcloud-d1-standard-16"}
			it.Status.DeprecatedAt = &metav1.Time{Time: clitest.Epoch.Add(-7 * 24 * time.Hour)}
		}
	}
	retired := types[0].DeepCopy()
	retired.Name, retired.Spec.DisplayName = "datumcloud-d0-micro", "Micro"
	retired.Spec.Lifecycle = computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseDisabled, ReplacementInstanceType: "datumcloud-d1-standard-2"}
	retired.Status.DeprecatedAt = &metav1.Time{Time: clitest.Epoch.Add(-60 * 24 * time.Hour)}
	retired.Status.Conditions = []metav1.Condition{{Type: computev1alpha.InstanceTypeConditionReady, Status: metav1.ConditionFalse, Reason: computev1alpha.InstanceTypeReasonDisabled}}
	items := append([]computev1alpha.InstanceType{*retired}, types...)
	Sort(items)
	return items
}

func TestInstanceTypesTable(t *testing.T) {
	for name, tc := range map[string]struct {
		terminal bool
		opts     cmdutil.TableOptions
	}{
		"terminal": {terminal: true},
		"pipe":     {},
		"wide":     {terminal: true, opts: cmdutil.TableOptions{Wide: true}},
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := Table(fixture(), clitest.Epoch, tc.opts).Render(&b, tc.terminal, 0); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "instance-types-"+name, b.String())
		})
	}
}

func TestInstanceTypesSortActiveFirstThenBySize(t *testing.T) {
	var got []string
	for _, it := range fixture() {
		got = append(got, it.Name)
	}
	want := "datumcloud-d1-standard-2 datumcloud-d1-standard-4 datumcloud-d1-standard-16 datumcloud-d1-standard-8 datumcloud-d0-micro"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestInstanceTypesSummaryCountsByPhase(t *testing.T) {
	if got, want := Summary(fixture()), "5 instance types: 3 active, 1 deprecated, 1 disabled; a workload that names none gets datumcloud-d1-standard-2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInstanceTypesJSON(t *testing.T) {
	var b strings.Builder
	list := &computev1alpha.InstanceTypeList{Items: fixture()[3:4]}
	if err := cmdutil.PrintObject(&b, cmdutil.OutputJSON, list, cmdutil.NewScheme()); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "instance-types-json", b.String())
}

func TestInstanceTypesFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"no arguments is all it needs":    {nil, cmdutil.ExitOK},
		"wide, json and yaml are formats": {[]string{"-o", "wide"}, cmdutil.ExitOK},
		"name is a format of objects":     {[]string{"-o", "name"}, cmdutil.ExitOK},
		"a selector is accepted":          {[]string{"-l", "tier=standard"}, cmdutil.ExitOK},
		"a malformed selector is usage":   {[]string{"-l", "tier in (("}, cmdutil.ExitUsage},
		"an unknown format is usage":      {[]string{"-o", "csv"}, cmdutil.ExitUsage},
		"a name argument is usage":        {[]string{"datumcloud-d1-standard-2"}, cmdutil.ExitUsage},
		"there is no -A":                  {[]string{"-A"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}
