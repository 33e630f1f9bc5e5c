package status

import (
	"fmt"
	"strings"
	"testing"

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
	_, insts := clitest.InMemory(w, world)
	return view.Snapshot{Workload: w, Instances: insts, Now: clitest.Epoch}
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
