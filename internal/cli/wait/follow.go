package wait

import (
	"context"
	"fmt"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// Follow ends a command that started a rollout of ref's workload (restart,
// undo, scale). With --wait it waits for the rollout (Wait with opts,
// for ref's workload and --timeout) and prints done's line for the
// progress it ended with; without --wait it says how to watch it, when
// hint is set. Then it prints the workload as it now is when -o asks for
// it.
func Follow(ctx context.Context, ref *cmdutil.WorkloadRef, output *cmdutil.OutputFlags, wf *cmdutil.WaitFlags,
	opts Options, hint bool, done func(view.Progress) string) error {
	switch {
	case wf.Wait:
		opts.Name, opts.Namespace, opts.Timeout = ref.Name, ref.Clients.Namespace, wf.Timeout
		p, err := Wait(ctx, ref.Factory, ref.Clients.Client, opts)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(opts.Out, done(p))
	case hint:
		_, _ = fmt.Fprintf(opts.Out, "Watch it with: %s\n", ref.Factory.Cmd("rollout status %s", ref.Name))
	}
	return ref.PrintCurrent(ctx, output)
}

// RolledOut is the success line of a finished rollout.
func RolledOut(p view.Progress) string {
	rev := ""
	if p.Revision > 0 {
		rev = fmt.Sprintf(" (revision %d)", p.Revision)
	}
	return fmt.Sprintf("%s is rolled out%s: %s", p.Name, rev, p.Line())
}
