// Package workloads implements `datumctl compute workloads`: the
// workloads of the namespace with their cities and readiness.
package workloads

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// ListOptions are the options of `workloads`.
type ListOptions struct {
	cmdutil.ProjectOptions
	// List is -l, -A and --no-headers.
	List cmdutil.ListFlags
	// Name, when given, shows that one workload.
	Name string
}

// NewCommand returns the workloads command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *ListOptions) {
	o := &ListOptions{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags())}
	o.Output.Wide = true
	cmd := cmdutil.Command(&cobra.Command{
		Use:     "workloads [NAME]",
		Aliases: []string{"workload", "wl"},
		Short:   "List the workloads of the project",
		Long: "List the workloads of the namespace: the cities each runs in, how many instances are ready,\n" +
			"how many run the latest template (UP-TO-DATE), its health (the management plane's verdict, as\n" +
			"status shows it) and whether the workload is available.",
		Example: "  datumctl compute workloads\n  datumctl compute workloads -o json\n" +
			"  datumctl compute workloads -A -l team=web\n  datumctl compute workloads -o name\n" +
			"  # A manifest deploy -f takes back unchanged\n  datumctl compute workloads web -o yaml > web.yaml",
		Args:              cmdutil.MaximumArgs("NAME"),
		ValidArgsFunction: cmdutil.CompleteWorkloadNames(f),
	}, o, o.Output)
	o.List.AddFlags(cmd)
	return cmd, o
}

// Complete takes the optional workload name.
func (o *ListOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	return nil
}

// Validate checks the flags.
func (o *ListOptions) Validate() error {
	if o.Name != "" && (o.List.Selector != "" || o.List.AllNamespaces || o.List.Watch) {
		return cmdutil.UsageErrorf("a workload NAME cannot be combined with -l, -A or -w")
	}
	return o.ValidateWith(o.List.Validate())
}

// Run lists the workloads.
func (o *ListOptions) Run(ctx context.Context) error {
	c := o.Clients
	if o.List.Watch {
		return o.watch(ctx, c)
	}
	if o.Name != "" {
		return o.one(ctx, c)
	}
	var list computev1alpha.WorkloadList
	if err := c.Client.List(ctx, &list, o.List.Options(c.Namespace, nil)...); err != nil {
		return fmt.Errorf("cannot list workloads %s: %w", o.List.Scope(c.Namespace), err)
	}
	found, err := o.view().Print(o.Factory, c, &list, list.Items)
	if err != nil || found || !o.Output.IsTable() {
		return err
	}
	_, _ = fmt.Fprintf(o.Factory.Streams.ErrOut, "No workloads found %s. Deploy one with: %s\n", o.List.Scope(c.Namespace),
		o.Factory.Cmd("deploy NAME --image IMAGE --city CITY"))
	return nil
}

// view shows the workloads.
func (o *ListOptions) view() cmdutil.ListView[computev1alpha.Workload, *computev1alpha.Workload] {
	return cmdutil.ListView[computev1alpha.Workload, *computev1alpha.Workload]{
		Output: o.Output, List: &o.List, Sort: SortWorkloads, Table: Table}
}

// watch prints the workloads, then each one again when it changes.
func (o *ListOptions) watch(ctx context.Context, c *cmdutil.Clients) error {
	src := o.List.Source(&computev1alpha.WorkloadList{}, &computev1alpha.Workload{}, c.Namespace, nil)
	return o.view().Watch(ctx, o.Factory, c, src)
}

// one shows the workload named on the command line: as a one-row table,
// or as the object itself with -o (a manifest deploy -f takes back).
func (o *ListOptions) one(ctx context.Context, c *cmdutil.Clients) error {
	var w computev1alpha.Workload
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: o.Name}, &w); err != nil {
		return o.Factory.WorkloadError(err, c.Namespace, o.Name)
	}
	s := o.Factory.Streams
	if !o.Output.IsTable() {
		return cmdutil.PrintObject(s.Out, o.Output.Format, &w, c.Scheme)
	}
	t := Table([]computev1alpha.Workload{w}, o.Factory.Now(), TableOptions{Wide: o.Output.IsWide()})
	o.List.AddLabelsColumn(t, &w)
	t.NoHeaders = o.List.NoHeaders
	return t.RenderTo(s)
}
