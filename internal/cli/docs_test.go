package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestTheCommandReferenceIsUpToDate(t *testing.T) {
	root, err := clitest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, cli.DocsPath))
	if err != nil {
		t.Fatalf("%s is missing: run go run ./hack/gendocs (%v)", cli.DocsPath, err)
	}
	if diff := cmp.Diff(string(want), cli.GenerateDocs()); diff != "" {
		t.Errorf("%s is stale: run go run ./hack/gendocs (-file +generated):\n%s", cli.DocsPath, diff)
	}
}

// globalFlagLine matches the usage line of a global flag.
var globalFlagLine = regexp.MustCompile(`(?m)^ +(-[a-z], )?--(kubeconfig|context|namespace|server|as-group|request-timeout|token|project|yes) `)

// Each command's help lists its own flags and points at `options`, which
// lists the global ones, as kubectl's does; the global flags still work on
// every command, and the reference documents them once.
func TestHelpShowsTheCommandsOwnFlagsAndOptionsTheGlobalOnes(t *testing.T) {
	t.Parallel()
	h := harness(t)
	pointer := `Use "datumctl compute options" for a list of global command-line options (applies to all commands).`
	for args, own := range map[string]string{
		"--help": "--plugin-manifest", "scale --help": "--min int32", "rollout undo --help": "--to-revision",
		"help deploy": "--image string", "completion bash --help": "--no-descriptions", "options --help": "-h, --help",
	} {
		res := h.Run(main, clitest.RunOptions{}, strings.Fields(args)...)
		if res.Code != cmdutil.ExitOK {
			t.Errorf("%s: exit %d: %s", args, res.Code, res.Stderr)
		}
		mustContain(t, args, res.Stdout, own, pointer)
		if g := globalFlagLine.FindAllString(res.Stdout, -1); len(g) > 0 {
			t.Errorf("%s lists global flags %q:\n%s", args, g, res.Stdout)
		}
	}
	options := h.Run(main, clitest.RunOptions{}, "options")
	if got := len(globalFlagLine.FindAllString(options.Stdout, -1)); options.Code != cmdutil.ExitOK || got != 9 ||
		strings.Contains(options.Stdout, "--plugin-manifest") {
		t.Errorf("options: exit %d, %d of the 9 global flags, want them all and no other command's:\n%s%s", options.Code, got, options.Stdout, options.Stderr)
	}
	res := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "-y", "--kubeconfig", "/nonexistent", "--context", "x", "--request-timeout", "5s")
	if res.Code != cmdutil.ExitFailure || !strings.Contains(res.Stderr, "Check --kubeconfig and --context.") {
		t.Errorf("global flags on a nested command: exit %d, want 1 from the kubeconfig: %s", res.Code, res.Stderr)
	}
	if got := len(globalFlagLine.FindAllString(cli.GenerateDocs(), -1)); got != 9 {
		t.Errorf("%s documents %d global flag lines, want each of the 9 once", cli.DocsPath, got)
	}
}
