package rollout

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/plan"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/cli/wait"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/revision"
)

// UndoOptions are the options of `rollout undo`: -o json or yaml print
// the resulting workload; --wait waits for the rollout it starts.
type UndoOptions struct {
	cmdutil.ChangeOptions
	// ToRevision is --to-revision; zero means the previous revision.
	ToRevision int64
	// AtOnce is --at-once: return every city at once instead of in the
	// waves of spec.rollout.
	AtOnce bool
}

// NewUndoCommand returns `rollout undo NAME`.
func NewUndoCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newUndoCommand(f)) }

// newUndoCommand returns the command and the options it fills.
func newUndoCommand(f *cmdutil.Factory) (*cobra.Command, *UndoOptions) {
	o := &UndoOptions{ChangeOptions: cmdutil.NewChangeOptions(f, wait.DefaultTimeout)}
	cmd := o.ChangeCommand(f, &cobra.Command{
		Use:   "undo NAME",
		Short: "Roll a workload back to an earlier template revision",
		Long: "Replace the workload's template with the one recorded in an earlier revision (by default the one\n" +
			"before the current) and roll it out. The revision it returns to becomes the newest revision. With\n" +
			"spec.rollout it travels in the same waves as any change (cities that already run it are done at once);\n" +
			"--at-once returns every city at the same time.",
		Example: "  datumctl compute rollout undo web\n" +
			"  datumctl compute rollout undo web --to-revision 2 --wait",
	}, o, "Wait for the rollout to finish, with live per-city progress.", "what would change")
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", 0, "The revision to return to (default: the one before the current).")
	cmd.Flags().BoolVar(&o.AtOnce, "at-once", false, "Return every city at once instead of in the waves of spec.rollout.")
	return cmd, o
}

// Validate checks the flags.
func (o *UndoOptions) Validate() error {
	var revision error
	if o.ToRevision < 0 {
		revision = cmdutil.UsageErrorf("--to-revision must be a revision number (1, 2, ...), got %d", o.ToRevision)
	}
	return o.ValidateWith(revision)
}

// Run rolls back.
func (o *UndoOptions) Run(ctx context.Context) error {
	w, c := o.Workload, o.Clients
	h, err := readHistory(ctx, &o.WorkloadRef)
	if err != nil {
		return err
	}
	target, err := o.target(h)
	if err != nil {
		return err
	}
	out, _ := o.Factory.Human(o.Output)
	if note := view.FailoverNote(o.Workload); note != "" {
		_, _ = fmt.Fprintln(out, note)
	}
	// Compared, and shown, as the template hash sees them: a revision
	// recorded before the interface defaults existed leaves them out.
	if equality.Semantic.DeepEqual(names.CanonicalTemplate(target.Template), names.CanonicalTemplate(&w.Spec.Template)) {
		_, _ = fmt.Fprintf(out, "Nothing to do: %s already runs the template of revision %d.\n", o.Name, target.Number)
		return o.Factory.PrintResult(o.Output, w, c.Scheme)
	}

	desired := w.Spec.DeepCopy()
	desired.Template = *names.CanonicalTemplate(target.Template)
	current := w.Spec.DeepCopy()
	current.Template = *names.CanonicalTemplate(&w.Spec.Template)
	p := plan.Compute(current, desired)
	_, _ = fmt.Fprintf(out, "Rolling %s back to revision %d:\n", o.Name, target.Number)
	for _, ch := range p.Changes {
		_, _ = fmt.Fprintf(out, "  %s\n", ch)
	}
	if o.DryRun == cmdutil.DryRunServer {
		checked := w.DeepCopy()
		if err := o.apply(ctx, checked, target); err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, "Server dry run: the server accepted the rollback; nothing was stored.")
		return o.Factory.PrintResult(o.Output, checked, c.Scheme)
	}
	if o.DryRun == cmdutil.DryRunClient {
		_, _ = fmt.Fprintln(out, "Dry run: nothing was changed.")
		rolled := w.DeepCopy()
		rolled.Spec = *desired
		return o.Factory.PrintResult(o.Output, rolled, c.Scheme)
	}
	if err := o.apply(ctx, w, target); err != nil {
		return err
	}
	how := "instances are replaced a few at a time"
	if w.Spec.Rollout != nil && !o.AtOnce {
		how += ", in the waves of spec.rollout"
	}
	_, _ = fmt.Fprintf(out, "Rolled back %s to the template of revision %d; %s.\n", o.Name, target.Number, how)
	return wait.Follow(ctx, &o.WorkloadWaitOptions, wait.Options{}, true, wait.RolledOut)
}

// target picks the revision to return to.
func (o *UndoOptions) target(h *History) (*Revision, error) {
	hint := "List the revisions with: " + o.Factory.Cmd("rollout history %s", o.Name)
	if o.ToRevision > 0 {
		r := h.Find(o.ToRevision)
		if r == nil {
			return nil, cmdutil.WithHints(fmt.Errorf("workload %s has no revision %d; it has %s", o.Name, o.ToRevision, h.Numbers()), hint)
		}
		return r, nil
	}
	var prev *Revision
	for i := range h.Revisions {
		if r := &h.Revisions[i]; r.Number < h.Current && (prev == nil || r.Number > prev.Number) {
			prev = r
		}
	}
	if prev == nil {
		return nil, cmdutil.WithHints(fmt.Errorf("workload %s has no earlier revision to roll back to (%s)", o.Name, h.Numbers()), hint)
	}
	return prev, nil
}

// apply replaces the template with a JSON patch guarded by the
// generation read: a merge patch would keep labels and annotations the old
// template did not have (see package revision).
func (o *UndoOptions) apply(ctx context.Context, w *computev1alpha.Workload, target *Revision) error {
	var p cmdutil.JSONPatch
	p.GuardGeneration(w.Generation)
	p.Replace("/spec/template", target.Template)
	entries := map[string]string{revision.ChangeCauseAnnotation: fmt.Sprintf("rollout undo --to-revision %d", target.Number)}
	if o.AtOnce {
		entries[computev1alpha.RolloutAtOnceAnnotation] = names.TemplateHash(target.Template)
	}
	p.SetMapEntries("/metadata/annotations", w.Annotations, entries)
	if err := p.Apply(ctx, o.Clients.Client, w, cmdutil.PatchOptions(o.DryRun)...); err != nil {
		return o.PatchError(err, " while rolling back", "roll back workload "+o.Name)
	}
	return nil
}
