package rollout

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/revision"
)

// HistoryOptions are the options of `rollout history`.
type HistoryOptions struct {
	// WorkloadRef is the workload, resolved before Run.
	cmdutil.WorkloadRef
	// Output is -o.
	Output *cmdutil.OutputFlags
	// Revision is --revision: show this revision's template.
	Revision int64
}

// NewHistoryCommand returns `rollout history NAME`.
func NewHistoryCommand(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.CommandOf(newHistoryCommand(f))
}

// newHistoryCommand returns the command and the options it fills.
func newHistoryCommand(f *cmdutil.Factory) (*cobra.Command, *HistoryOptions) {
	o := &HistoryOptions{WorkloadRef: cmdutil.NewWorkloadRef(f), Output: cmdutil.NewOutputFlags()}
	cmd := cmdutil.WorkloadCommand(f, &cobra.Command{
		Use:   "history NAME",
		Short: "List a workload's template revisions",
		Long: "List the revisions the server recorded for a workload's template, oldest first, with when each\n" +
			"became current, its images, who made the change and why (kubernetes.io/change-cause). The newest is\n" +
			"current. --revision N shows that revision's template.",
		Example: "  datumctl compute rollout history web\n  datumctl compute rollout history web --revision 2",
	}, o, o.Output)
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "Show the template of this revision.")
	return cmd, o
}

// Validate checks the flags.
func (o *HistoryOptions) Validate() error {
	if o.Revision < 0 {
		return cmdutil.UsageErrorf("--revision must be a revision number (1, 2, ...), got %d", o.Revision)
	}
	return o.Output.Validate()
}

// Run lists the revisions.
func (o *HistoryOptions) Run(ctx context.Context) error {
	h, err := readHistory(ctx, &o.WorkloadRef)
	if err != nil {
		return err
	}
	s := o.Factory.Streams
	if o.Revision > 0 {
		e := h.Find(o.Revision)
		if e == nil {
			return cmdutil.WithHints(fmt.Errorf("workload %s has no revision %d; it has %s", o.Name, o.Revision, h.Numbers()),
				"List them with: "+o.Factory.Cmd("rollout history %s", o.Name))
		}
		if !o.Output.IsTable() {
			return cmdutil.PrintView(s.Out, o.Output.Format, e)
		}
		return RenderRevision(s.Out, e, o.Factory.Now())
	}
	for i := range h.Revisions {
		h.Revisions[i].Template = nil
	}
	if !o.Output.IsTable() {
		return cmdutil.PrintView(s.Out, o.Output.Format, h)
	}
	if len(h.Revisions) == 0 {
		_, _ = fmt.Fprintf(s.ErrOut, "No revisions recorded for %s yet: the management plane records one when it first sees the workload.\n", o.Name)
		return nil
	}
	return HistoryTable(h, o.Factory.Now(), s.OutTerminal).RenderTo(s)
}

// readHistory reads the revisions of r's workload into its history.
func readHistory(ctx context.Context, r *cmdutil.WorkloadRef) (*History, error) {
	revs, err := Revisions(ctx, r.Clients, r.Workload)
	if err != nil {
		return nil, err
	}
	return BuildHistory(r.Workload, revs)
}

// Revisions lists the ControllerRevisions of w, oldest first: found by the
// workload-uid label and controlled by w.
func Revisions(ctx context.Context, c *cmdutil.Clients, w *computev1alpha.Workload) ([]*appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := c.Client.List(ctx, &list, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return nil, fmt.Errorf("cannot list the revisions of workload %s: %w", w.Name, err)
	}
	owned := revision.Owned(w, list.Items)
	out := make([]*appsv1.ControllerRevision, 0, len(owned))
	for i := range owned {
		out = append(out, &owned[i])
	}
	revision.Sort(out)
	return out, nil
}
