package instances

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// DescribeOptions are the options of `instances describe`.
type DescribeOptions struct {
	cmdutil.ProjectOptions
	// Name is the instance.
	Name string
}

// NewDescribeCommand returns `instances describe NAME`.
func NewDescribeCommand(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.CommandOf(newDescribeCommand(f))
}

// newDescribeCommand returns the command and the options it fills.
func newDescribeCommand(f *cmdutil.Factory) (*cobra.Command, *DescribeOptions) {
	o := &DescribeOptions{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags())}
	cmd := cmdutil.Command(&cobra.Command{
		Use:   "describe NAME",
		Short: "Show an instance in detail: status, conditions, addresses, events and next steps",
		Example: "  datumctl compute instances describe web-dfw-1a2b3c4d-0\n" +
			"  datumctl compute instances describe web-dfw-1a2b3c4d-0 -o yaml",
		Args: cmdutil.ExactArgs("NAME"),
	}, o, o.Output)
	return cmd, o
}

// Complete takes the instance name.
func (o *DescribeOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	return nil
}

// Run describes the instance.
func (o *DescribeOptions) Run(ctx context.Context) error {
	c := o.Clients
	var inst computev1alpha.Instance
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: o.Name}, &inst); err != nil {
		if apierrors.IsNotFound(err) {
			return cmdutil.WithHints(fmt.Errorf("instance %q not found in namespace %s", o.Name, c.Namespace),
				"List the instances with: "+o.Factory.Cmd("instances"))
		}
		return fmt.Errorf("cannot read instance %s: %w", o.Name, err)
	}
	s := o.Factory.Streams
	if !o.Output.IsTable() {
		return cmdutil.PrintObject(s.Out, o.Output.Format, &inst, c.Scheme)
	}
	// Events are a courtesy: a project that may not read them still gets
	// the rest.
	var events corev1.EventList
	_ = c.Client.List(ctx, &events, client.InNamespace(c.Namespace),
		client.MatchingFields{"involvedObject.name": inst.Name, "involvedObject.kind": "Instance", "involvedObject.uid": string(inst.UID)})
	// Whether there is something to roll back to, for the next steps.
	canUndo := false
	var w computev1alpha.Workload
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: inst.Labels[computev1alpha.WorkloadNameLabel]}, &w); err == nil {
		canUndo = w.Status.CurrentRevision > 1 || w.Generation > 1
	}
	d := Describe(&inst, events.Items, o.Factory.Now(), o.Factory.Cmd, canUndo)
	return d.Render(s.Out, s.OutTerminal, s.Width)
}
