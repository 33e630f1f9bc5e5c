// Package instances implements `datumctl compute instances` (list, with
// readable statuses such as "Pending (quota exceeded)") and `instances
// describe` (conditions, events, addresses and next steps).
package instances

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// ListOptions are the options of `instances` and `instances list`.
type ListOptions struct {
	cmdutil.ProjectOptions
	// Workload is --workload: only this workload's instances.
	Workload string
	// CityFlag is --city: only instances in this city.
	cmdutil.CityFlag
	// List is -l, -A and --no-headers.
	List cmdutil.ListFlags
}

// NewCommand returns the instances command with its list and describe
// subcommands; without a subcommand it lists.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd, _ := newListCommand(f, "instances")
	cmd.Aliases = []string{"instance", "inst"}
	cmd.Args = cmdutil.UnknownCommand
	list, _ := newListCommand(f, "list")
	cmd.AddCommand(list)
	cmd.AddCommand(NewDescribeCommand(f))
	return cmd
}

// newListCommand returns a list command called use and its options.
func newListCommand(f *cmdutil.Factory, use string) (*cobra.Command, *ListOptions) {
	o := &ListOptions{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags())}
	o.Output.Wide = true
	cmd := cmdutil.Command(&cobra.Command{
		Use:   use,
		Short: "List the instances of the project's workloads",
		Long: "List instances with the city they run in, their address, instance type, age and status.\n" +
			"STATUS is Available, Starting, Terminating, Pending (<why>) or Failed (<why>), for example\n" +
			"\"Pending (quota exceeded)\" or \"Failed (image unavailable)\".",
		Example: "  datumctl compute instances\n" +
			"  datumctl compute instances --workload web --city DFW\n" +
			"  datumctl compute instances -o json",
		Args: cmdutil.NoArgs,
	}, o, o.Output)
	cmd.Flags().StringVar(&o.Workload, "workload", "", "Only the instances of this workload.")
	o.AddCityFlag(cmd, f, "Only the instances in this city (a city code such as DFW).")
	o.List.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("workload", cmdutil.CompleteWorkloadNames(f))
	return cmd, o
}

// Complete normalises the flags.
func (o *ListOptions) Complete(_ *cobra.Command, _ []string) error {
	o.CompleteCity()
	return nil
}

// Validate checks the flags.
func (o *ListOptions) Validate() error { return o.ValidateWith(o.ValidateCity(), o.List.Validate()) }

// Run lists the instances.
func (o *ListOptions) Run(ctx context.Context) error {
	c := o.Clients
	sel := map[string]string{}
	if o.Workload != "" {
		sel[computev1alpha.WorkloadNameLabel] = o.Workload
	}
	if o.City != "" {
		sel[computev1alpha.CityCodeLabel] = o.City
	}
	if o.List.Watch {
		return o.watch(ctx, c, sel)
	}
	var list computev1alpha.InstanceList
	if err := c.Client.List(ctx, &list, o.List.Options(c.Namespace, sel)...); err != nil {
		return fmt.Errorf("cannot list instances %s: %w", o.List.Scope(c.Namespace), err)
	}
	found, err := o.view().Print(o.Factory, c, &list, list.Items)
	if err != nil || !o.Output.IsTable() {
		return err
	}
	s := o.Factory.Streams
	if !found {
		_, _ = fmt.Fprintf(s.ErrOut, "No instances found%s.\n", o.scope(c.Namespace))
		return nil
	}
	if s.OutTerminal {
		_, _ = fmt.Fprintln(s.ErrOut, Summary(list.Items))
	}
	return nil
}

// view shows the instances.
func (o *ListOptions) view() cmdutil.ListView[computev1alpha.Instance, *computev1alpha.Instance] {
	return cmdutil.ListView[computev1alpha.Instance, *computev1alpha.Instance]{
		Output: o.Output, List: &o.List, Sort: SortInstances, Table: Table}
}

// scope describes the filters for the "nothing found" message.
func (o *ListOptions) scope(namespace string) string {
	var parts []string
	if o.Workload != "" {
		parts = append(parts, "for workload "+o.Workload)
	}
	if o.City != "" {
		parts = append(parts, "in "+o.City)
	}
	parts = append(parts, o.List.Scope(namespace))
	return " " + strings.Join(parts, " ")
}

// watch prints the instances, then each one again when it changes.
func (o *ListOptions) watch(ctx context.Context, c *cmdutil.Clients, sel map[string]string) error {
	src := o.List.Source(&computev1alpha.InstanceList{}, &computev1alpha.Instance{}, c.Namespace, sel)
	return o.view().Watch(ctx, o.Factory, c, src)
}
