// Command datumctl-compute is the compute CLI: a datumctl plugin
// (`datumctl compute ...`) that also runs standalone with --kubeconfig.
// See docs/cli.md.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"k8s.io/utils/clock"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// version and commit are set at build time (.goreleaser.yaml does):
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/datumctl-compute
//
// Without them, buildInfo takes what the Go toolchain recorded.
var (
	version = "dev"
	commit  = ""
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	f := &cmdutil.Factory{
		Streams: cmdutil.SystemIOStreams(),
		Clock:   clock.RealClock{},
		Getenv:  os.Getenv,
		Build:   buildInfo(),
		Name:    cli.ProgramName(os.Args[0]),
	}
	code := cli.Main(ctx, os.Args[1:], f)
	stop()
	os.Exit(code)
}

// buildInfo returns the version and commit stamped with -ldflags or, when
// they were not, what the Go toolchain recorded in the binary: the module
// version of `go install github.com/citycells/compute/cmd/datumctl-compute@v0.1.0`,
// or the pseudo-version of the checked-out commit for a `go build` in the
// repository. Only a build that recorded neither says "dev".
func buildInfo() cmdutil.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return buildInfoFrom(version, commit, info)
}

// buildInfoFrom is buildInfo over the stamped version and commit and what
// the toolchain recorded (nil when nothing).
func buildInfoFrom(version, commit string, info *debug.BuildInfo) cmdutil.BuildInfo {
	b := cmdutil.BuildInfo{Version: version, Commit: commit}
	if info == nil {
		return b
	}
	if v := info.Main.Version; b.Version == "dev" && v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && b.Commit == "" && len(s.Value) >= 7 {
			b.Commit = s.Value[:7]
		}
	}
	return b
}
