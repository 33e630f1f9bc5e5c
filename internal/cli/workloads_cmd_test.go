package cli_test

import (
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestWorkloadsListsWhatTheUserDeployed(t *testing.T) {
	t.Parallel()
	h := harness(t)

	empty := h.Run(main, clitest.RunOptions{}, "workloads")
	if empty.Code != 0 || empty.Stdout != "" || !strings.Contains(empty.Stderr, "No workloads found in namespace "+h.Namespace) {
		t.Fatalf("an empty namespace should say so on stderr only: %+v", empty)
	}

	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", clitest.World{"LHR": {clitest.Available, clitest.QuotaExceeded}})
	h.CreateWorkload(clitest.NewWorkload("api").Placement("default", 1, "SIN").Build())

	res := h.Run(main, clitest.RunOptions{Terminal: true, Width: 120}, "workloads")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("want a header and two rows, got:\n%s", res.Stdout)
	}
	if !strings.Contains(lines[1], "api") || !strings.Contains(lines[1], "SIN") || !strings.Contains(lines[1], "Pending") {
		t.Errorf("api has no status yet: %q", lines[1])
	}
	for _, want := range []string{"web", "DFW,LHR", "3/4", "4", "Yes"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("web row %q lacks %q", lines[2], want)
		}
	}

	piped := h.Run(main, clitest.RunOptions{}, "workloads")
	if !strings.Contains(piped.Stdout, "web\tDFW,LHR\t3/4\t4\tYes\t") {
		t.Errorf("a pipe gets tab-separated values:\n%s", piped.Stdout)
	}

	js := h.Run(main, clitest.RunOptions{}, "workloads", "-o", "json")
	if js.Code != 0 || !strings.Contains(js.Stdout, `"kind": "WorkloadList"`) || !strings.Contains(js.Stdout, `"name": "web"`) {
		t.Errorf("-o json prints the list: %s %s", js.Stdout, js.Stderr)
	}
}
