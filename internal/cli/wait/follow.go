package wait

import (
	"context"
	"fmt"

	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// Follow ends a command that changed o's workload (restart, undo, scale,
// suspend and resume). With --wait it waits for the change (Wait with
// opts, for o's workload and --timeout, writing where Human says) and
// prints done's line for the progress it ended with; without --wait it
// says how to watch it, when hint is set. Then it prints the workload as
// it now is when -o asks for it.
func Follow(ctx context.Context, o *cmdutil.WorkloadWaitOptions, opts Options, hint bool, done func(view.Progress) string) error {
	opts.Out, opts.Terminal = o.Factory.Human(o.Output)
	switch {
	case o.WaitFlags.Wait:
		opts.Name, opts.Namespace, opts.Timeout = o.Name, o.Clients.Namespace, o.WaitFlags.Timeout
		p, err := Wait(ctx, o.Factory, o.Clients.Client, opts)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(opts.Out, done(p))
	case hint:
		_, _ = fmt.Fprintf(opts.Out, "Watch it with: %s\n", o.Factory.Cmd("rollout status %s", o.Name))
	}
	return o.PrintCurrent(ctx, o.Output)
}

// Finished returns the success line of a change that finished, for
// Follow: "<ed> <name>: <progress>" ("Scaled web: ...").
func Finished(ed, name string) func(view.Progress) string {
	return func(p view.Progress) string { return fmt.Sprintf("%s %s: %s", ed, name, p.Line()) }
}

// RolledOut is the success line of a finished rollout.
func RolledOut(p view.Progress) string {
	rev := ""
	if p.Revision > 0 {
		rev = fmt.Sprintf(" (revision %d)", p.Revision)
	}
	return fmt.Sprintf("%s is rolled out%s: %s", p.Name, rev, p.Line())
}
