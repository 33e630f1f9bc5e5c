package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/status"
)

// DefaultTimeout bounds a rollout wait unless --timeout says otherwise.
const DefaultTimeout = 10 * time.Minute

// maxListedFailures bounds the failures an error message lists.
const maxListedFailures = 3

// Fetch reads the Workload name in namespace. A missing Workload is an
// error that names the fix.
func Fetch(ctx context.Context, c client.Client, f *cmdutil.Factory, namespace, name string) (view.Snapshot, error) {
	var w computev1alpha.Workload
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &w); err != nil {
		return view.Snapshot{}, f.WorkloadError(err, namespace, name)
	}
	return view.Snapshot{Workload: &w, Now: f.Now()}, nil
}

// Sources are what a wait on workload name watches: the Workload alone,
// whose status says where every city stands and names the Instances that
// fail.
func Sources(namespace, name string) []cmdutil.WatchSource {
	return []cmdutil.WatchSource{
		{List: &computev1alpha.WorkloadList{}, Object: &computev1alpha.Workload{}, Namespace: namespace,
			Fields: fields.OneTermEqualSelector("metadata.name", name)},
	}
}

// FromSeen is the snapshot Fetch would read, from what a wait on Sources
// has seen. A missing Workload is an error that names the fix.
func FromSeen(f *cmdutil.Factory, seen cmdutil.Seen, namespace, name string) (view.Snapshot, error) {
	snap := view.Snapshot{Now: f.Now()}
	for _, o := range seen[0] {
		if w, ok := o.(*computev1alpha.Workload); ok && w.Name == name {
			snap.Workload = w.DeepCopy()
		}
	}
	if snap.Workload == nil {
		return snap, f.WorkloadError(apierrors.NewNotFound(computev1alpha.GroupVersion.WithResource("workloads").GroupResource(), name),
			namespace, name)
	}
	return snap, nil
}

// Options configure Wait.
type Options struct {
	// Name of the workload.
	Name string
	// Namespace of the workload.
	Namespace string
	// Expect is what must be seen beyond a settled rollout.
	Expect view.Expectation
	// Timeout bounds the wait; DefaultTimeout when zero.
	Timeout time.Duration
	// Verb names the wait in the header: "Rolling out", "Restarting".
	Verb string
	// Out receives the progress; the factory's output stream when nil.
	Out io.Writer
	// Terminal says whether Out is a terminal (redraw in place).
	Terminal bool
}

// Wait renders the rollout of a workload to the output stream
// until it is done. It returns the last progress and nil when done; an
// ExitError naming the failing instances and next steps when one fails
// terminally (exit 1); ExitPending at the timeout; ExitInterrupted on
// Ctrl-C.
func Wait(ctx context.Context, f *cmdutil.Factory, c client.WithWatch, o Options) (view.Progress, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	verb := o.Verb
	if verb == "" {
		verb = "Rolling out"
	}
	out, terminal := o.Out, o.Terminal
	if out == nil {
		out, terminal = f.Streams.Out, f.Streams.OutTerminal
	}
	live := cmdutil.NewLive(out, terminal, f.Streams.Width)
	start := f.Now()
	var last view.Progress
	var snap view.Snapshot
	reconnecting := ""
	render := func() {
		frame := []string{verb + " " + o.Name + "…"}
		line := o.Name + ": waiting for the first answer"
		if last.Name != "" {
			frame, line = Frame(verb, last, f.Now().Sub(start)), o.Name+": "+last.Line()
		}
		if reconnecting != "" {
			frame = append(frame, "  reconnecting… ("+reconnecting+")")
			line = o.Name + ": reconnecting… (" + reconnecting + ")"
		}
		live.Update(frame, line)
	}
	err := f.WatchUntil(ctx, c, cmdutil.Wait{
		Timeout: timeout,
		Sources: Sources(o.Namespace, o.Name),
		Step: func(seen cmdutil.Seen) (bool, error) {
			s, err := FromSeen(f, seen, o.Namespace, o.Name)
			if err != nil {
				return false, err
			}
			snap = s
			last = view.Read(s, o.Expect)
			render()
			return last.Done || len(last.Failures) > 0, nil
		},
		Reconnecting: func(reason string) {
			reconnecting = reason
			render()
		},
	})
	switch {
	case err == nil && len(last.Failures) > 0:
		return last, FailureError(f, last, snap)
	case err == nil:
		return last, nil
	case errors.Is(err, cmdutil.ErrTimeout):
		return last, &cmdutil.ExitError{Code: cmdutil.ExitPending,
			Err: fmt.Errorf("timed out after %s waiting for %s: %s", cmdutil.ShortDuration(timeout), o.Name, last.Line()),
			Hints: []string{"The rollout continues on the server. Keep watching with: " +
				f.Cmd("rollout status %s", o.Name)}}
	case errors.Is(err, cmdutil.ErrInterrupted):
		return last, &cmdutil.ExitError{Code: cmdutil.ExitInterrupted,
			Err:   fmt.Errorf("stopped waiting for %s: %s", o.Name, last.Line()),
			Hints: []string{"The rollout continues on the server. Watch it with: " + f.Cmd("rollout status %s", o.Name)}}
	}
	return last, err
}

// Frame renders progress as a block for a terminal: a header with the
// elapsed time and one aligned line per city.
func Frame(verb string, p view.Progress, elapsed time.Duration) []string {
	rev := ""
	if p.Revision > 0 {
		rev = fmt.Sprintf(" (revision %d)", p.Revision)
	}
	lines := []string{fmt.Sprintf("%s %s%s: %d/%d ready [%s]", verb, p.Name, rev, p.Ready, p.Desired,
		cmdutil.ShortDuration(elapsed.Truncate(time.Second)))}
	if p.Waiting != "" {
		lines = append(lines, "  "+p.Waiting)
	}
	seen := map[string]int{}
	width := 0
	for _, c := range p.Cities {
		seen[c.City]++
	}
	for _, c := range p.Cities {
		width = max(width, len(c.Label(seen[c.City] > 1)))
	}
	for _, c := range p.Cities {
		label := c.Label(seen[c.City] > 1)
		if c.Status == computev1alpha.CityStateRemoving {
			lines = append(lines, fmt.Sprintf("  %-*s  removing (%d left)", width, label, c.Replicas))
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-*s  %d/%d  %s", width, label, c.Ready, c.Desired, c.State))
	}
	return lines
}

// FailureError describes the terminal failures of p with the next steps.
func FailureError(f *cmdutil.Factory, p view.Progress, s view.Snapshot) error {
	groups := view.GroupFailures(p.Failures)
	var b strings.Builder
	fmt.Fprintf(&b, "%s cannot finish rolling out:", p.Name)
	for i, g := range groups {
		if i == maxListedFailures {
			fmt.Fprintf(&b, "\n  ... and %d more", len(groups)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", g.Subject(), g.Status)
		if g.Message != "" {
			fmt.Fprintf(&b, " — %s", cmdutil.OneLine(g.Message))
		}
	}
	worst := groups[0]
	hints := status.NextSteps(worst.Reason, status.Hints{Cmd: f.Cmd, Workload: p.Name, City: worst.City,
		CanUndo: s.Workload != nil && (s.Workload.Status.CurrentRevision > 1 || s.Workload.Generation > 1)})
	return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: errors.New(b.String()), Hints: hints}
}
