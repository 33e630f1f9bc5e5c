package workloads

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// fixture is three workloads in the states users meet: healthy, blocked
// by quota in one city, and not yet seen by the management plane.
func fixture() []computev1alpha.Workload {
	healthy := clitest.NewWorkload("web").Build()
	clitest.InMemory(healthy, nil)
	healthy.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "ReplicasAvailable"}}

	blocked := clitest.NewWorkload("api").Placement("default", 2, "DFW", "LHR", "SIN").Build()
	clitest.InMemory(blocked, clitest.World{"SIN": {clitest.QuotaExceeded}})
	blocked.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "ReplicasAvailable"}}

	none := clitest.NewWorkload("batch").Placement("default", 1, "SIN").Created(clitest.Epoch.Add(-30e9)).Build()
	down := clitest.NewWorkload("worker").Placement("default", 1, "LHR").Build()
	clitest.InMemory(down, clitest.World{"LHR": {clitest.ImageUnavailable}})
	down.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "ImageUnavailable"}}

	items := []computev1alpha.Workload{*healthy, *blocked, *none, *down}
	SortWorkloads(items)
	return items
}

func TestWorkloadsTable(t *testing.T) {
	for name, terminal := range map[string]bool{"terminal": true, "pipe": false} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := Table(fixture(), clitest.Epoch, TableOptions{}).Render(&b, terminal, 100); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "workloads-"+name, b.String())
		})
	}
}

func TestWorkloadsJSON(t *testing.T) {
	var b strings.Builder
	list := &computev1alpha.WorkloadList{Items: fixture()[3:]}
	if err := cmdutil.PrintObject(&b, cmdutil.OutputJSON, list, cmdutil.NewScheme()); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "workloads-json", b.String())
}

func TestWorkloadsFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"no flags list the table":     {nil, cmdutil.ExitOK},
		"json output is accepted":     {[]string{"-o", "json"}, cmdutil.ExitOK},
		"an unknown format is usage":  {[]string{"-o", "xml"}, cmdutil.ExitUsage},
		"one name shows one workload": {[]string{"web"}, cmdutil.ExitOK},
		"two names are usage":         {[]string{"web", "api"}, cmdutil.ExitUsage},
		"a name with -A is usage":     {[]string{"web", "-A"}, cmdutil.ExitUsage},
		"a bad selector is usage":     {[]string{"-l", "a in (b"}, cmdutil.ExitUsage},
		"-o name is accepted":         {[]string{"-o", "name"}, cmdutil.ExitOK},
		"an unknown flag is usage":    {[]string{"--all"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(cmd, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}

func TestWorkloadsWideTableAddsRevisionAndImages(t *testing.T) {
	var b strings.Builder
	if err := Table(fixture(), clitest.Epoch, TableOptions{Wide: true, AllNamespaces: true}).Render(&b, true, 0); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "workloads-wide", b.String())
}

func TestWorkloadsShowLabelsAddsALabelsColumn(t *testing.T) {
	items := fixture()
	items[0].Labels = map[string]string{"team": "shop", "app": "api"}
	var out strings.Builder
	f := &cmdutil.Factory{Clock: clocktesting.NewFakeClock(clitest.Epoch),
		Streams: cmdutil.IOStreams{IOStreams: genericiooptions.IOStreams{Out: &out}}}
	o := &ListOptions{ProjectOptions: cmdutil.ProjectOptions{Output: cmdutil.NewObjectOutputFlags()}, List: cmdutil.ListFlags{ShowLabels: true}}
	list := &computev1alpha.WorkloadList{Items: items}
	if _, err := o.view().Print(f, &cmdutil.Clients{Scheme: cmdutil.NewScheme()}, list, list.Items); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, want := range []string{"AGE   LABELS", "3d    app=api,team=shop", "30s   <none>"} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %d %q does not end with %q:\n%s", i, lines[i], want, out.String())
		}
	}

	// Without the flag, no column; the flag parses.
	o.List.ShowLabels = false
	out.Reset()
	if _, err := o.view().Print(f, &cmdutil.Clients{Scheme: cmdutil.NewScheme()}, list, list.Items); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "LABELS") {
		t.Errorf("a LABELS column without --show-labels:\n%s", out.String())
	}
	cmd, opts := newCommand(&cmdutil.Factory{})
	if err := cmdutil.Parse(cmd, opts, []string{"--show-labels", "-o", "wide"}); err != nil || !opts.List.ShowLabels {
		t.Errorf("--show-labels: %v, ShowLabels %v", err, opts.List.ShowLabels)
	}
}
