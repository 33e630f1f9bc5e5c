package destroy

import (
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
func TestSummaryCountsWhatGoes(t *testing.T) {
	w := clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR", "SIN").Build()
	_, insts := clitest.InMemory(w, nil)
	var b strings.Builder
	Summary(&b, w, insts[:5])
	clitest.Golden(t, "summary", b.String())
}

func TestDestroyFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"a name":                  {[]string{"web"}, cmdutil.ExitOK},
		"a name and a wait":       {[]string{"web", "--wait", "--timeout", "30s"}, cmdutil.ExitOK},
		"no name is usage":        {nil, cmdutil.ExitUsage},
		"a zero timeout is usage": {[]string{"web", "--timeout", "0s"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}
