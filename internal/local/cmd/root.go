//go:build linux

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/exitcode"
	"github.com/citycells/compute/internal/local/platform"
)

// Exit codes of compute-local: the shared ones of the CLIs
// (internal/exitcode), and one of its own.
const (
	// ExitOK means success (status: everything is up).
	ExitOK = exitcode.OK
	// ExitFailure means the command failed (status: something is down).
	ExitFailure = exitcode.Failure
	// ExitUsage means the command line was wrong.
	ExitUsage = exitcode.Usage
	// ExitNotRunning means no platform is recorded in the state directory.
	ExitNotRunning = 3
)

// failure is a command that failed (exit 1); ErrNotRunning exits 3.
func failure(err error) error {
	if errors.Is(err, platform.ErrNotRunning) {
		return withCode(err, ExitNotRunning)
	}
	return withCode(err, ExitFailure)
}

// usage is a command line mistake (exit 2).
func usage(err error) error { return withCode(err, ExitUsage) }

// withCode gives err the exit code code, unless it already has one.
func withCode(err error, code int) error {
	if err == nil {
		return nil
	}
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		return err
	}
	return &exitcode.Error{Code: code, Err: err}
}

// Streams are the command's input and output.
type Streams struct {
	// Out receives results; Err receives progress and errors.
	Out, Err io.Writer
}

// globalOptions are the flags shared by every command.
type globalOptions struct {
	streams  Streams
	stateDir string
}

// resolveStateDir returns --state-dir or the default.
func (o *globalOptions) resolveStateDir() (string, error) {
	if o.stateDir != "" {
		return o.stateDir, nil
	}
	return platform.DefaultStateDir()
}

// readState reads the state of the chosen directory.
func (o *globalOptions) readState() (*platform.State, error) {
	dir, err := o.resolveStateDir()
	if err != nil {
		return nil, failure(err)
	}
	st, err := platform.ReadState(dir)
	return st, failure(err)
}

// stateOptions are the options of the commands that act on a running
// platform: Complete reads the state `up` left. Commands that need nothing
// else completed use it as their Complete.
type stateOptions struct {
	*globalOptions
	state *platform.State
}

// Complete reads the state.
func (o *stateOptions) Complete(*cobra.Command, []string) error {
	var err error
	o.state, err = o.readState()
	return err
}

// serverOptions are the options of the hidden commands a detached platform
// runs its servers with: their flags are all they need, so Complete has
// nothing to resolve.
type serverOptions struct {
	*globalOptions
}

// Complete has nothing to resolve.
func (serverOptions) Complete(*cobra.Command, []string) error { return nil }

// newServerCommand builds the hidden server command use, described by
// short (which says that compute-local up runs it), for o.
func newServerCommand(use, short string, o runner) *cobra.Command {
	return &cobra.Command{
		Use:    use,
		Short:  short,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   runE(o),
	}
}

// serveUntilSignal runs serve until ctx ends or SIGTERM or SIGINT comes.
func serveUntilSignal(ctx context.Context, serve func(ctx context.Context) error) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx)
}

// runner is a command with the anatomy of every CLI of the project
// (internal/cli/cmdutil.Runner, which compute-local does not import): Complete
// fills the options from the arguments and flags, Validate checks them
// without talking to a server, Run does the work.
type runner interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE adapts a command to cobra: Complete, Validate, Run, their errors
// carrying compute-local's exit codes. What Complete and Run return is a
// failure, what Validate returns a usage error, unless either already
// carries a code.
func runE(c runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := c.Complete(cmd, args); err != nil {
			return failure(err)
		}
		if err := c.Validate(); err != nil {
			return usage(err)
		}
		return failure(c.Run(cmd.Context()))
	}
}

// Main runs compute-local with args and returns its exit code.
func Main(args []string, streams Streams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		if ee.Err != nil && ee.Err.Error() != "" {
			fprintf(streams.Err, "compute-local: %v\n", ee.Err)
		}
		return ee.Code
	}
	fprintf(streams.Err, "compute-local: %v\nRun compute-local --help for usage.\n", err)
	return ExitUsage
}

// NewCommand builds the compute-local command tree.
func NewCommand(streams Streams) *cobra.Command {
	o := &globalOptions{streams: streams}
	root := &cobra.Command{
		Use:   "compute-local",
		Short: "Run compute's local platform: project plane, Karmada federation plane and city cells",
		Long: `compute-local runs a complete local compute platform from real components
(etcd, kube-apiserver, kube-controller-manager, Karmada, compute-manager),
with no Docker and no external cluster. State, kubeconfigs and logs live in
the state directory (--state-dir, $` + platform.EnvStateDir + `, default
$XDG_STATE_HOME/compute-local or ~/.local/state/compute-local).

Fault controls (stop, start, restart, partition, heal) break the running
platform on purpose, to see what the product does when a component or a
city fails.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.PersistentFlags().StringVar(&o.stateDir, "state-dir", "", "State directory (default $"+platform.EnvStateDir+", then the user state directory)")
	root.AddGroup(&cobra.Group{ID: "platform", Title: "Platform:"}, &cobra.Group{ID: "faults", Title: "Fault controls:"})
	for _, c := range []*cobra.Command{newUpCommand(o), newDownCommand(o), newStatusCommand(o), newKubeconfigCommand(o), newEnvCommand(o), newImageCommand(o)} {
		c.GroupID = "platform"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{
		newStopCommand(o), newStartCommand(o), newRestartCommand(o), newPartitionCommand(o), newHealCommand(o),
	} {
		c.GroupID = "faults"
		root.AddCommand(c)
	}
	root.AddCommand(newLinkProxyCommand(o), newRegistryCommand(o))
	return root
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// since formats the time elapsed since t.
func since(t time.Time) string {
	return time.Since(t).Round(10 * time.Millisecond).String()
}

// fprintf writes to a terminal stream; there is nothing useful to do when
// that fails.
func fprintf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// fprintln is fprintf for fmt.Fprintln.
func fprintln(w io.Writer, args ...any) {
	_, _ = fmt.Fprintln(w, args...)
}
