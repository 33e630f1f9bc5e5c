// Package instancetypes implements `datumctl compute instance-types`: the
// project's InstanceType catalog with each type's phase, vCPU, memory and
// replacement, so a developer can pick a type for `deploy --instance-type`
// and see which ones are being retired.
package instancetypes

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// Options are the options of `instance-types`.
type Options struct {
	cmdutil.ProjectOptions
	// List is -l, --no-headers and -w (InstanceTypes belong to no
	// namespace: there is no -A).
	List cmdutil.ListFlags
}

// NewCommand returns the instance-types command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and its options.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	// The catalog is cluster-scoped: every list reads it whole.
	o := &Options{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags()), List: cmdutil.ListFlags{AllNamespaces: true}}
	o.Output.Wide = true
	cmd := cmdutil.Command(&cobra.Command{
		Use:     "instance-types",
		Aliases: []string{"instance-type", "instancetypes", "itypes"},
		Short:   "List the instance types workloads can run on",
		Long: "List the project's instance types (the InstanceType catalog) with their phase, vCPU, memory and\n" +
			"replacement. A workload names one with `deploy --instance-type`; without it, it gets " + catalog.DefaultInstanceType + ".\n\n" +
			"PHASE is Active, Deprecated (still runs; move to the REPLACEMENT) or Disabled (no new workload may\n" +
			"use it; existing ones keep running until you move them). -o wide adds the display name, the\n" +
			"retired spellings still accepted, READY, and when the type was deprecated.",
		Example: "  datumctl compute instance-types\n" +
			"  datumctl compute instance-types -o wide\n" +
			"  datumctl compute instance-types -o yaml",
		Args: cmdutil.NoArgs,
	}, o, o.Output)
	cmd.Flags().StringVarP(&o.List.Selector, "selector", "l", o.List.Selector,
		"Only instance types whose labels match this selector (e.g. -l tier=standard).")
	cmd.Flags().BoolVar(&o.List.NoHeaders, "no-headers", o.List.NoHeaders, "Leave the header line out of the table.")
	cmd.Flags().BoolVarP(&o.List.Watch, "watch", "w", o.List.Watch,
		"After listing, print the catalog again when a type changes, until Ctrl-C.")
	o.List.AddSortByFlag(cmd)
	o.List.AddShowLabelsFlag(cmd)
	return cmd, o
}

// Complete has nothing to resolve besides the project.
func (o *Options) Complete(_ *cobra.Command, _ []string) error { return nil }

// Validate checks the flags.
func (o *Options) Validate() error { return o.ValidateWith(o.List.Validate()) }

// Run lists the instance types.
func (o *Options) Run(ctx context.Context) error {
	c := o.Clients
	if o.List.Watch {
		src := o.List.Source(&computev1alpha.InstanceTypeList{}, &computev1alpha.InstanceType{}, "", nil)
		return o.view().Watch(ctx, o.Factory, c, src)
	}
	var list computev1alpha.InstanceTypeList
	if err := c.Client.List(ctx, &list, o.List.Options("", nil)...); err != nil {
		return listError(err)
	}
	found, err := o.view().Print(o.Factory, c, &list, list.Items)
	if err != nil || !o.Output.IsTable() {
		return err
	}
	s := o.Factory.Streams
	if !found {
		if o.List.Selector != "" {
			_, _ = fmt.Fprintf(s.ErrOut, "No instance types found matching %s.\n", o.List.Selector)
			return nil
		}
		_, _ = fmt.Fprintln(s.ErrOut, "No instance types found: this project offers none, so no workload can be deployed. "+
			"Ask the platform operator to publish the InstanceType catalog.")
		return nil
	}
	if s.OutTerminal {
		_, _ = fmt.Fprintln(s.ErrOut, Summary(list.Items))
	}
	return nil
}

// view shows the instance types.
func (o *Options) view() cmdutil.ListView[computev1alpha.InstanceType, *computev1alpha.InstanceType] {
	return cmdutil.ListView[computev1alpha.InstanceType, *computev1alpha.InstanceType]{
		Output: o.Output, List: &o.List, Sort: Sort,
		Table: func(items []computev1alpha.InstanceType, now time.Time, opts cmdutil.TableOptions) *cmdutil.Table {
			// No NAMESPACE column: the catalog belongs to no namespace.
			opts.AllNamespaces = false
			return Table(items, now, opts)
		},
	}
}

// listError explains why the catalog could not be read.
func listError(err error) error {
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return cmdutil.WithHints(fmt.Errorf("this control plane has no InstanceType API: %w", err),
			"its compute version predates the instance-type catalog; ask the platform operator to upgrade it")
	case apierrors.IsForbidden(err):
		return cmdutil.WithHints(fmt.Errorf("you may not read the instance types: %w", err),
			"ask the project's administrator for read access to instancetypes.compute.datumapis.com")
	}
	return fmt.Errorf("cannot list instance types: %w", err)
}
