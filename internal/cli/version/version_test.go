package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestPluginManifest(t *testing.T) {
	var b strings.Builder
	if err := WriteManifest(&b, cmdutil.BuildInfo{Version: "v0.1.0"}); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "manifest", b.String())
}

func TestVersionOutput(t *testing.T) {
	for _, format := range []string{cmdutil.OutputTable, cmdutil.OutputJSON} {
		t.Run(format, func(t *testing.T) {
			var out strings.Builder
			f := &cmdutil.Factory{Build: cmdutil.BuildInfo{Version: "v0.1.0", Commit: "abc1234"}}
			f.Streams.Out = &out
			o := &Options{Factory: f, Output: &cmdutil.OutputFlags{Format: format}}
			if err := o.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "version-"+format, strings.ReplaceAll(out.String(), runtime.Version(), "GOVERSION"))
		})
	}
}
