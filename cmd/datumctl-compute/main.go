// Command datumctl-compute is the compute CLI: a datumctl plugin
// (`datumctl compute ...`) that also runs standalone with --kubeconfig.
// See docs/cli.md.
package main

import (
	"context"
	"os"

	"k8s.io/utils/clock"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// version and commit are set at build time:
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/datumctl-compute
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
		Build:   cmdutil.BuildInfo{Version: version, Commit: commit},
		Name:    cli.ProgramName(os.Args[0]),
	}
	code := cli.Main(ctx, os.Args[1:], f)
	stop()
	os.Exit(code)
}
