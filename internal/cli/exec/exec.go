// Package exec implements `datumctl compute exec INSTANCE [-c C] [-i] [-t]
// -- COMMAND...`: run a command in an instance's container, as kubectl
// exec does in a Pod — non-interactive with stdout and stderr (and stdin
// with -i), or interactive with a terminal (-it; resizing the terminal
// resizes the remote one). The remote command's exit code is the CLI's.
//
// The session goes through the project plane's debug API
// (/apis/debug.compute.datumapis.com/v1alpha/namespaces/NS/instances/NAME/exec,
// internal/debugapi), authorized with the user's own identity (create
// instances/exec, which the project's edit role grants and view does not).
package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/exitcode"
)

// Options are the options of `exec`.
type Options struct {
	// Factory connects to the project.
	Factory *cmdutil.Factory
	// Instance is the instance to run in.
	Instance string
	// Command is what to run.
	Command []string
	// Container is -c/--container; the instance's first when empty.
	Container string
	// Stdin is -i/--stdin: pass standard input.
	Stdin bool
	// TTY is -t/--tty: a terminal (with -i, an interactive one).
	TTY bool

	config    *rest.Config
	namespace string
}

// NewCommand returns the exec command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "exec INSTANCE [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Run a command in an instance's container",
		Long: "Run a command in a running instance's container, as kubectl exec does in a Pod: with -i standard input\n" +
			"is passed, with -t the command gets a terminal (-it for a shell; resizing your terminal resizes it). The\n" +
			"command's exit code becomes this command's. It runs with your own rights in the project (create\n" +
			"instances/exec, which the project's edit role grants and view does not).",
		Example: "  datumctl compute exec web-dfw-0 -- cat /etc/config/app.yaml\n" +
			"  datumctl compute exec web-dfw-0 -it -- sh\n  datumctl compute exec web-dfw-0 -c sidecar -- env",
		RunE: cmdutil.RunE(o),
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Container, "container", "c", "", "The container to run in; the instance's first when empty.")
	fl.BoolVarP(&o.Stdin, "stdin", "i", false, "Pass standard input to the command.")
	fl.BoolVarP(&o.TTY, "tty", "t", false, "Give the command a terminal.")
	return cmd, o
}

// Complete splits the instance from the command (after --).
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	switch {
	case len(args) == 0:
		return cmdutil.UsageErrorf("exec needs an INSTANCE and, after --, a COMMAND")
	case dash == 0:
		return cmdutil.UsageErrorf("exec needs an INSTANCE before --")
	case dash < 0 || dash > 1:
		return cmdutil.UsageErrorf("exec takes one INSTANCE and the COMMAND after --: datumctl compute exec INSTANCE -- COMMAND")
	}
	o.Instance, o.Command = args[0], args[1:]
	return nil
}

// Validate checks the command is there.
func (o *Options) Validate() error {
	if len(o.Command) == 0 {
		return cmdutil.UsageErrorf("exec needs a COMMAND after --")
	}
	return nil
}

// execURL is the debug API's exec URL of the instance on host.
func (o *Options) execURL(host string) (*url.URL, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	u.Path = fmt.Sprintf("%s/apis/debug.compute.datumapis.com/v1alpha/namespaces/%s/instances/%s/exec",
		u.Path, o.namespace, o.Instance)
	q := url.Values{"command": o.Command, "stdout": {"true"}}
	if o.Stdin {
		q.Set("stdin", "true")
	}
	if o.TTY {
		q.Set("tty", "true")
	} else {
		q.Set("stderr", "true")
	}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// Run runs the command and returns its exit code as the error's.
func (o *Options) Run(ctx context.Context) error {
	c, err := o.Factory.Clients()
	if err != nil {
		return err
	}
	o.config, o.namespace = c.Config, c.Namespace
	u, err := o.execURL(c.Config.Host)
	if err != nil {
		return fmt.Errorf("bad server address %q: %w", c.Config.Host, err)
	}
	executor, err := newExecutor(o.config, u)
	if err != nil {
		return err
	}
	streams, restore, err := o.streams()
	if err != nil {
		return err
	}
	defer restore()
	return exitError(executor.StreamWithContext(ctx, streams))
}

// newExecutor speaks WebSocket, falling back to SPDY, as kubectl does.
func newExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, fmt.Errorf("cannot start an exec session: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, fmt.Errorf("cannot start an exec session: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// streams are the session's streams; with -t on a terminal, standard
// input is put in raw mode (restore undoes it) and resizes are sent.
func (o *Options) streams() (remotecommand.StreamOptions, func(), error) {
	s := o.Factory.Streams
	opts := remotecommand.StreamOptions{Stdout: s.Out, Tty: o.TTY}
	if !o.TTY {
		opts.Stderr = s.ErrOut
	}
	if o.Stdin {
		opts.Stdin = s.In
	}
	in, ok := s.In.(*os.File)
	if !o.TTY || !o.Stdin || !ok || !term.IsTerminal(int(in.Fd())) {
		return opts, func() {}, nil
	}
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return opts, func() {}, fmt.Errorf("cannot put the terminal in raw mode: %w", err)
	}
	sizes, stop := resizes(int(in.Fd()))
	opts.TerminalSizeQueue = sizes
	return opts, func() {
		stop()
		_ = term.Restore(int(in.Fd()), state)
	}, nil
}

// sizeQueue sends the terminal's size at first and whenever it changes
// (SIGWINCH; polled on Windows).
type sizeQueue chan remotecommand.TerminalSize

// Next returns the next size; nil when the session ends.
func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// resizes watches the terminal fd's size until stop.
func resizes(fd int) (remotecommand.TerminalSizeQueue, func()) {
	q := make(sizeQueue, 1)
	winch, stopEvents := resizeEvents()
	done := make(chan struct{})
	var last remotecommand.TerminalSize
	send := func() {
		if w, h, err := term.GetSize(fd); err == nil {
			size := remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)} //nolint:gosec // a terminal's size fits
			if size == last {
				return
			}
			last = size
			select {
			case q <- size:
			default:
			}
		}
	}
	send()
	go func() {
		defer close(q)
		for {
			select {
			case <-winch:
				send()
			case <-done:
				return
			}
		}
	}()
	return q, func() {
		stopEvents()
		close(done)
	}
}

// exitError turns the remote command's exit code into the CLI's.
func exitError(err error) error {
	var code utilexec.CodeExitError
	if errors.As(err, &code) {
		return &exitcode.Error{Code: code.Code, Err: fmt.Errorf("command terminated with exit code %d", code.Code)}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return cmdutil.Failf("%v", err)
	}
	return nil
}
