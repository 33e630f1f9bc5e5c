package rollout

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
)

// StatusOptions are the options of `rollout status`: the progress reads
// the workload with its deployments and instances. -o json or yaml print
// the last progress seen (a RolloutStatus document) whatever the outcome;
// --watch, the default, waits for the rollout to finish (for at most
// --timeout), --watch=false looks once.
type StatusOptions struct {
	cmdutil.WorkloadWatchOptions
}

// NewStatusCommand returns `rollout status NAME`.
func NewStatusCommand(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.CommandOf(newStatusCommand(f))
}

// newStatusCommand returns the command and the options it fills.
func newStatusCommand(f *cmdutil.Factory) (*cobra.Command, *StatusOptions) {
	o := &StatusOptions{cmdutil.WorkloadWatchOptions{
		WorkloadWaitOptions: cmdutil.NewWorkloadWaitOptions(f, cmdutil.NewOutputFlags(), wait.DefaultTimeout), Watch: true}}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:   "status NAME",
		Short: "Wait for a workload's rollout to finish, showing per-city progress",
		Long: "Show per-city progress until every city runs the latest template at the desired scale with every\n" +
			"instance ready (exit 0). Stops early with exit 1 when an instance fails in a way waiting will not fix\n" +
			"(image unavailable, crashing, configuration error, quota exceeded), with exit 3 at --timeout, and\n" +
			"with exit 130 on Ctrl-C; the rollout itself continues on the server. --watch=false looks once:\n" +
			"exit 0 when rolled out, 3 while in progress.",
		Example: "  datumctl compute rollout status web\n" +
			"  datumctl compute rollout status web --timeout 2m\n" +
			"  datumctl compute rollout status web --watch=false",
	}, o, o.Output)
	o.AddWatchFlags(cmd, "Wait until the rollout finishes; with --watch=false, look once.", "How long to wait before giving up (exit 3).")
	return cmd, o
}

// Run waits for (or looks once at) the rollout.
func (o *StatusOptions) Run(ctx context.Context) error {
	c := o.Clients
	out, terminal := o.Factory.Human(o.Output)
	var p view.Progress
	var err error
	if o.Watch {
		p, err = wait.Wait(ctx, o.Factory, c.Client, wait.Options{Name: o.Name, Namespace: c.Namespace, Timeout: o.WaitFlags.Timeout,
			Out: out, Terminal: terminal})
	} else {
		var snap view.Snapshot
		if snap, err = wait.Fetch(ctx, c.Client, o.Factory, c.Namespace, o.Name); err != nil {
			return err
		}
		p = view.Read(snap, view.Expectation{})
		switch {
		case len(p.Failures) > 0:
			err = wait.FailureError(o.Factory, p, snap)
		case !p.Done:
			_, _ = fmt.Fprintf(out, "%s: %s\n", o.Name, p.Line())
			err = cmdutil.PendingErrorf("the rollout of %s is still in progress", o.Name)
		}
	}
	if err == nil {
		_, _ = fmt.Fprintln(out, wait.RolledOut(p))
	}
	if !o.Output.IsTable() && p.Name != "" {
		if perr := cmdutil.PrintView(o.Factory.Streams.Out, o.Output.Format, StatusDocument{
			APIVersion: cmdutil.ViewAPIVersion, Kind: "RolloutStatus", Progress: p}); perr != nil {
			return perr
		}
	}
	return err
}

// StatusDocument is what `rollout status -o json|yaml` prints.
type StatusDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	view.Progress
}
