// Package statusview implements `datumctl compute status NAME`: a workload's
// health, image, current revision, per-city table and blocking reasons
// with next steps, once or continuously with --watch.
package statusview

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/wait"
)

// DefaultWatchTimeout bounds `status --watch` unless --timeout says
// otherwise.
const DefaultWatchTimeout = 30 * time.Minute

// Options are the options of `status`: the view reads the workload with
// its deployments and instances; --watch keeps showing it as it changes,
// for at most --timeout.
type Options struct {
	cmdutil.WorkloadWatchOptions
}

// NewCommand returns the status command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{cmdutil.WorkloadWatchOptions{
		WorkloadWaitOptions: cmdutil.NewWorkloadWaitOptions(f, cmdutil.NewOutputFlags(), DefaultWatchTimeout)}}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:   "status NAME",
		Short: "Show a workload's health, cities, revision and what blocks it",
		Long: "Show the health of a workload (Healthy, Progressing, Degraded, Failing, Unknown, Scaled to zero,\n" +
			"Suspending, Suspended: the management plane's verdict, status.health), its image and current\n" +
			"revision, a table of its cities with ready and up-to-date instances and the state the management\n" +
			"plane gives each, and every reason an instance is not serving, with the next step to take.\n" +
			"For a placement that autoscales, each city's autoscaler: its bounds, current and desired instances\n" +
			"and each metric against its target (\"autoscaling 1–4, 3 replicas, cpu 72%/50%\"), and why it\n" +
			"cannot scale (AutoscalingReady False) or is held at a bound (AutoscalingLimited True).\n" +
			"--watch keeps the view up to date until Ctrl-C or --timeout.",
		Example: "  datumctl compute status web\n  datumctl compute status web --watch\n  datumctl compute status web -o json",
	}, o, o.Output)
	o.AddWatchFlags(cmd, "Keep showing the status as it changes, until Ctrl-C or --timeout.", "How long --watch watches.")
	return cmd, o
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.Watch && !o.Output.IsTable() {
		return cmdutil.UsageErrorf("--watch shows a live view; it cannot be combined with -o %s", o.Output.Format)
	}
	return o.WorkloadWaitOptions.Validate()
}

// Run shows the status, once or until stopped.
func (o *Options) Run(ctx context.Context) error {
	c := o.Clients
	s := o.Factory.Streams
	if !o.Watch {
		snap, err := wait.Fetch(ctx, c.Client, o.Factory, c.Namespace, o.Name)
		if err != nil {
			return err
		}
		v := Build(snap, o.Factory.Cmd)
		if !o.Output.IsTable() {
			return cmdutil.PrintView(s.Out, o.Output.Format, v)
		}
		return v.Render(s.Out, s.OutTerminal, s.Width)
	}

	live := cmdutil.NewLive(s.Out, s.OutTerminal, s.Width)
	var v *View
	reconnecting := ""
	render := func() {
		var frame []string
		line := o.Name + ": waiting for the first answer"
		if v != nil {
			frame, line = v.Lines(s.Width), v.Name+": "+v.Health+" — "+v.Line
		}
		if reconnecting != "" {
			frame = append(frame, "reconnecting… ("+reconnecting+")")
			line = o.Name + ": reconnecting… (" + reconnecting + ")"
		}
		live.Update(frame, line)
	}
	err := o.Factory.WatchUntil(ctx, c.Client, cmdutil.Wait{
		Timeout: o.WaitFlags.Timeout,
		Sources: wait.Sources(c.Namespace, o.Name),
		Step: func(seen cmdutil.Seen) (bool, error) {
			snap, err := wait.FromSeen(o.Factory, seen, c.Namespace, o.Name)
			if err != nil {
				return false, err
			}
			v = Build(snap, o.Factory.Cmd)
			render()
			return false, nil
		},
		Reconnecting: func(reason string) {
			reconnecting = reason
			render()
		},
	})
	// A watch is a view: Ctrl-C and the end of --timeout end it normally.
	if errors.Is(err, cmdutil.ErrInterrupted) || errors.Is(err, cmdutil.ErrTimeout) {
		return nil
	}
	return err
}
