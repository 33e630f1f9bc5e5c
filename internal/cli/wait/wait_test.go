package wait

import (
	"strings"
	"testing"
	"time"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// snapshot returns web in three cities converged in world.
func snapshot(world clitest.World) view.Snapshot {
	w := clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR", "SIN").Build()
	w.Status.CurrentRevision = 4
	clitest.InMemory(w, world)
	return view.Snapshot{Workload: w, Now: clitest.Epoch}
}

func TestFrame(t *testing.T) {
	p := view.Read(snapshot(clitest.World{"LHR": {clitest.Available, clitest.Provisioning}, "SIN": {clitest.PendingQuota}}), view.Expectation{})
	clitest.Golden(t, "frame", strings.Join(Frame("Rolling out", p, 83*time.Second), "\n")+"\n")
}

func TestFailureErrorNamesTheInstancesAndTheFix(t *testing.T) {
	s := snapshot(clitest.World{"LHR": {clitest.Crashing}, "SIN": {clitest.Available, clitest.ImageUnavailable}})
	p := view.Read(s, view.Expectation{})
	err := FailureError(&cmdutil.Factory{Name: "datumctl compute"}, p, s)
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Fatalf("exit code %d", cmdutil.ExitCode(err))
	}
	var b strings.Builder
	cmdutil.PrintError(&b, err)
	clitest.Golden(t, "failure", b.String())
}
