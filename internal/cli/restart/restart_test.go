package restart

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestPatch(t *testing.T) {
	w := clitest.NewWorkload("web").Build()
	w.Annotations = map[string]string{CityRestartedAtAnnotation("DFW"): "2026-06-01T10:00:00Z", "team": "edge"}
	for name, tc := range map[string]struct {
		city string
		want string
	}{
		"a city restart only marks the workload's metadata": {"LHR",
			`{"metadata":{"annotations":{"compute.datumapis.com/restartedAt.LHR":"2026-06-01T12:00:00Z"}}}`},
		"a whole restart stamps the template and drops city restarts": {"",
			`{"metadata":{"annotations":{"compute.datumapis.com/restartedAt.DFW":null,"kubernetes.io/change-cause":"restart"}},` +
				`"spec":{"template":{"metadata":{"annotations":{"compute.datumapis.com/restartedAt":"2026-06-01T12:00:00Z"}}}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Patch(w, tc.city, "2026-06-01T12:00:00Z")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestTwoRestartsInOneSecondBothRestart(t *testing.T) {
	f := &cmdutil.Factory{Clock: clocktesting.NewFakeClock(clitest.Epoch.Add(300 * time.Millisecond))}
	w := clitest.NewWorkload("web").Build()
	w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: "2026-06-01T12:00:00Z"}
	o := &Options{ChangeOptions: cmdutil.ChangeOptions{WorkloadWaitOptions: cmdutil.WorkloadWaitOptions{WorkloadRef: cmdutil.NewWorkloadRef(f)}}}
	if got := o.stamp(w); got != "2026-06-01T12:00:01Z" {
		t.Errorf("got %s", got)
	}
	o.City = "DFW"
	if got := o.stamp(w); got != "2026-06-01T12:00:00Z" {
		t.Errorf("a first city restart takes the time as it is, got %s", got)
	}
}

func TestRestartFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
		wantCity string
	}{
		"a name":                  {[]string{"web"}, cmdutil.ExitOK, ""},
		"a city is upper-cased":   {[]string{"web", "--city", "dfw"}, cmdutil.ExitOK, "DFW"},
		"a bad city is usage":     {[]string{"web", "--city", "Dallas"}, cmdutil.ExitUsage, ""},
		"no name is usage":        {nil, cmdutil.ExitUsage, ""},
		"a zero timeout is usage": {[]string{"web", "--wait", "--timeout", "0s"}, cmdutil.ExitUsage, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Fatalf("exit code %d, want %d", got, tc.wantCode)
			}
			if tc.wantCode == cmdutil.ExitOK && o.City != tc.wantCity {
				t.Errorf("city %q, want %q", o.City, tc.wantCity)
			}
		})
	}
}
