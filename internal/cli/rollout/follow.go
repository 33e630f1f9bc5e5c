package rollout

import (
	"context"
	"fmt"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
)

// Follow ends a command that started a rollout of ref's workload (restart,
// undo, scale). With --wait it waits for the rollout (wait.Wait with opts,
// for ref's workload and --timeout) and prints done's line for the
// progress it ended with; without --wait it says how to watch it, when
// hint is set. Then it prints the workload as it now is when -o asks for
// it.
func Follow(ctx context.Context, ref *cmdutil.WorkloadRef, output *cmdutil.OutputFlags, wf *cmdutil.WaitFlags,
	opts wait.Options, hint bool, done func(view.Progress) string) error {
	switch {
	case wf.Wait:
		opts.Name, opts.Namespace, opts.Timeout = ref.Name, ref.Clients.Namespace, wf.Timeout
		p, err := wait.Wait(ctx, ref.Factory, ref.Clients.Client, opts)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(opts.Out, done(p))
	case hint:
		_, _ = fmt.Fprintf(opts.Out, "Watch it with: %s\n", ref.Factory.Cmd("rollout status %s", ref.Name))
	}
	return ref.PrintCurrent(ctx, output)
}
