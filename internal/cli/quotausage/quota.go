// Package quotausage implements `datumctl compute quota [--city C]`: the
// project's usage against its limits for instances, vCPU and memory,
// usage per city, "[at limit]" markers, and the instances quota blocks.
package quotausage

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// Options are the options of `quota`.
type Options struct {
	cmdutil.ProjectOptions
	// CityFlag is --city: usage and blocked instances of this city only.
	cmdutil.CityFlag
}

// NewCommand returns the quota command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewOutputFlags())}
	cmd := cmdutil.Command(&cobra.Command{
		Use:   "quota",
		Short: "Show quota usage and limits for instances, vCPU and memory",
		Long: "Show what the project uses of its quota — instances, vCPU and memory — against its limits, which\n" +
			"every city shares; usage per city; \"[at limit]\" where nothing more fits; and the instances that\n" +
			"wait for quota, with what to do about them.",
		Example: "  datumctl compute quota\n  datumctl compute quota --city LHR\n  datumctl compute quota -o json",
		Args:    cmdutil.NoArgs,
	}, o, o.Output)
	o.AddCityFlag(cmd, f, "Show usage and blocked instances of this city only (limits stay per project).")
	return cmd, o
}

// Complete normalises the flags.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	o.CompleteCity()
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error { return o.ValidateWith(o.ValidateCity()) }

// Run shows the quota.
func (o *Options) Run(ctx context.Context) error {
	c := o.Clients
	var insts computev1alpha.InstanceList
	if err := c.Client.List(ctx, &insts, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("cannot list instances in namespace %s: %w", c.Namespace, err)
	}
	buckets, why, err := readBuckets(ctx, c.Client)
	if err != nil {
		return err
	}
	types, err := catalog.Load(ctx, c.Client)
	if err != nil {
		return fmt.Errorf("cannot read the instance types that size the instances: %w", err)
	}
	v := Build(Input{Target: c.Target, Instances: insts.Items, Buckets: buckets, LimitsUnavailable: why, City: o.City, InstanceTypes: types})
	s := o.Factory.Streams
	if !o.Output.IsTable() {
		return cmdutil.PrintView(s.Out, o.Output.Format, v)
	}
	return v.Render(s.Out, s.OutTerminal, s.Width, o.Factory.Cmd)
}

// readBuckets lists the project's AllowanceBuckets. When the quota API is
// missing or forbidden it returns no buckets and why, not an error: usage
// is still worth showing.
func readBuckets(ctx context.Context, c client.Client) ([]quotav1alpha1.AllowanceBucket, string, error) {
	var list quotav1alpha1.AllowanceBucketList
	err := c.List(ctx, &list)
	switch {
	case err == nil:
		return list.Items, "", nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, "this project has no quota system: usage is shown without limits", nil
	case apierrors.IsForbidden(err):
		return nil, "you may not read this project's quota limits: usage is shown without them", nil
	}
	return nil, "", fmt.Errorf("cannot read quota limits: %w", err)
}
