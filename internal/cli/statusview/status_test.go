package statusview

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// cmd renders command lines as datumctl does.
func cmd(format string, args ...any) string {
	return "datumctl compute " + fmt.Sprintf(format, args...)
}

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// snapshot returns workload web converged in world.
func snapshot(world clitest.World) view.Snapshot {
	w := clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR", "SIN").Build()
	w.Status.CurrentRevision = 3
	clitest.InMemory(w, world)
	return view.Snapshot{Workload: w, Now: clitest.Epoch}
}

func TestStatusView(t *testing.T) {
	for name, world := range map[string]clitest.World{
		"healthy":  nil,
		"degraded": {"LHR": {clitest.Available, clitest.QuotaExceeded}, "SIN": {clitest.ImageUnavailable}},
		"starting": {"SIN": {clitest.Available, clitest.Provisioning}},
	} {
		v := Build(snapshot(world), cmd)
		for _, out := range []struct {
			suffix   string
			terminal bool
		}{{"terminal", true}, {"pipe", false}} {
			t.Run(name+"/"+out.suffix, func(t *testing.T) {
				var b strings.Builder
				if err := v.Render(&b, out.terminal, 100); err != nil {
					t.Fatal(err)
				}
				clitest.Golden(t, "status-"+name+"-"+out.suffix, b.String())
			})
		}
		t.Run(name+"/json", func(t *testing.T) {
			var b strings.Builder
			if err := cmdutil.PrintView(&b, cmdutil.OutputJSON, v); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "status-"+name+"-json", b.String())
		})
	}
}

func TestStatusFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"a name is all it needs":            {[]string{"web"}, cmdutil.ExitOK},
		"without a name it is usage":        {nil, cmdutil.ExitUsage},
		"two names are usage":               {[]string{"web", "api"}, cmdutil.ExitUsage},
		"watch is accepted":                 {[]string{"web", "--watch"}, cmdutil.ExitOK},
		"watch with json is usage":          {[]string{"web", "-w", "-o", "json"}, cmdutil.ExitUsage},
		"a watch needs a positive deadline": {[]string{"web", "-w", "--timeout", "0s"}, cmdutil.ExitUsage},
		"a malformed deadline is usage":     {[]string{"web", "--timeout", "soon"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}

func TestStatusShowsARetiringInstanceType(t *testing.T) {
	s := snapshot(nil)
	const msg = "InstanceType 'datumcloud-d1-standard-8' is deprecated; please migrate to 'datumcloud-d1-standard-16'."
	meta.SetStatusCondition(&s.Workload.Status.Conditions, metav1.Condition{
		Type: computev1alpha.InstanceTypeConditionDeprecated, Status: metav1.ConditionTrue,
		Reason: computev1alpha.InstanceTypeConditionDeprecated, Message: msg,
	})
	v := Build(s, cmd)
	var b strings.Builder
	if err := v.Render(&b, false, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nType:      "+msg+"\n") {
		t.Errorf("the status does not name the replacement:\n%s", b.String())
	}
	var js strings.Builder
	if err := cmdutil.PrintView(&js, cmdutil.OutputJSON, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"instanceType": {`) || !strings.Contains(js.String(), "please migrate to 'datumcloud-d1-standard-16'") {
		t.Errorf("-o json lacks the instance type condition:\n%s", js.String())
	}
}
