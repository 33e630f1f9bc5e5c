package cli_test

import (
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestCompletionPrintsAScriptForEveryShell(t *testing.T) {
	t.Parallel()
	h := harness(t)
	for shell, want := range map[string]string{
		"bash":       "bash completion",
		"zsh":        "#compdef",
		"fish":       "complete -c",
		"powershell": "Register-ArgumentCompleter",
	} {
		t.Run(shell, func(t *testing.T) {
			res := h.Run(main, clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig = "" }}, "completion", shell)
			if res.Code != cmdutil.ExitOK || !strings.Contains(res.Stdout, want) {
				t.Errorf("exit %d, stdout lacks %q:\n%.400s%s", res.Code, want, res.Stdout, res.Stderr)
			}
		})
	}
	help := h.Run(main, clitest.RunOptions{}, "completion", "--help")
	if !strings.Contains(help.Stdout, "powershell") {
		t.Errorf("completion --help does not list powershell:\n%s", help.Stdout)
	}
}
