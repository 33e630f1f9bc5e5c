package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of compute-local.
const (
	// ExitOK means success (status: everything is up).
	ExitOK = 0
	// ExitFailure means the command failed (status: something is down).
	ExitFailure = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
	// ExitNotRunning means no platform is recorded in the state directory.
	ExitNotRunning = 3
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a command line mistake (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, args...)}
}

// failure is a command that failed (exit 1); ErrNotRunning exits 3.
func failure(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, ErrNotRunning) {
		return &exitError{ExitNotRunning, err}
	}
	return &exitError{ExitFailure, err}
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
	return DefaultStateDir()
}

// readState reads the state of the chosen directory.
func (o *globalOptions) readState() (*State, error) {
	dir, err := o.resolveStateDir()
	if err != nil {
		return nil, failure(err)
	}
	st, err := ReadState(dir)
	return st, failure(err)
}

// command is the anatomy of every compute-local command (the kubectl and
// datumctl-compute one): Complete resolves flags and arguments into the
// options, Validate checks them, Run uses only the options.
type command interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE adapts a command to cobra: Complete, Validate, Run; errors keep
// their exit codes, and anything else is a failure.
func runE(c command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := c.Complete(cmd, args); err != nil {
			return failure(err)
		}
		if err := c.Validate(); err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			return &exitError{ExitUsage, err}
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
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fprintf(streams.Err, "compute-local: %v\n", ee.err)
		}
		return ee.code
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
the state directory (--state-dir, $` + EnvStateDir + `, default
$XDG_STATE_HOME/compute-local or ~/.local/state/compute-local).

Fault controls (stop, start, restart, partition, heal) break the running
platform on purpose, to see what the product does when a component or a
city fails.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.PersistentFlags().StringVar(&o.stateDir, "state-dir", "", "State directory (default $"+EnvStateDir+", then the user state directory)")
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

// fprintf writes to a terminal stream; there is nothing useful to do when
// that fails.
func fprintf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// fprintln is fprintf for fmt.Fprintln.
func fprintln(w io.Writer, args ...any) {
	_, _ = fmt.Fprintln(w, args...)
}
