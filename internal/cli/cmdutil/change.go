package cmdutil

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// ChangeOptions are what the commands that change one workload and may
// wait for the change share (destroy, restart, scale, suspend and resume,
// rollout undo): the workload (NAME), -o json or yaml printing the
// workload as the change leaves it, --wait with --timeout, and --dry-run.
// Embed them in a command's options.
type ChangeOptions struct {
	WorkloadWaitOptions
	// DryRun is --dry-run: none, client (say what would change and stop)
	// or server (also have the server check it without storing it).
	DryRun string
}

// NewChangeOptions returns the options of a change command built with f,
// waiting at most timeout unless --timeout says otherwise.
func NewChangeOptions(f *Factory, timeout time.Duration) ChangeOptions {
	return ChangeOptions{WorkloadWaitOptions: NewWorkloadWaitOptions(f, NewObjectOutputFlags(), timeout)}
}

// ChangeCommand finishes cmd, a change command for o on the workload named
// by its one argument (WorkloadCommand), whose ChangeOptions are c: it
// adds --wait, with waitHelp, and --dry-run, which shows dryRunWhat.
func (c *ChangeOptions) ChangeCommand(f *Factory, cmd *cobra.Command, o Runner, waitHelp, dryRunWhat string) *cobra.Command {
	cmd = WorkloadCommand(f, cmd, o, c.Output)
	c.WaitFlags.AddFlags(cmd, waitHelp)
	AddDryRunFlag(cmd, &c.DryRun, dryRunWhat)
	return cmd
}

// Validate checks --dry-run, then --timeout and -o. Options with nothing
// else to check use it as their Validate.
func (c *ChangeOptions) Validate() error { return c.ValidateWith() }

// ValidateWith checks --dry-run, then returns the first of checks that is
// not nil (the results of a command's own checks, in their order), then
// checks --timeout and -o.
func (c *ChangeOptions) ValidateWith(checks ...error) error {
	if err := ValidateDryRun(c.DryRun); err != nil {
		return err
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return c.WorkloadWaitOptions.Validate()
}

// MergePatch applies the JSON merge patch to the workload as --dry-run
// says and returns the workload it leaves: with none the Workload itself,
// patched on the server; with server a copy the server patched without
// storing it; with client a copy patched here, sending nothing. A failed
// patch is explained by PatchError with doing and action.
func (c *ChangeOptions) MergePatch(ctx context.Context, patch []byte, doing, action string) (*computev1alpha.Workload, error) {
	w := c.Workload
	switch c.DryRun {
	case DryRunClient:
		return MergePatched(w.DeepCopy(), patch)
	case DryRunServer:
		w = w.DeepCopy()
	}
	if err := c.Clients.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, patch), PatchOptions(c.DryRun)...); err != nil {
		return nil, c.PatchError(err, doing, action)
	}
	return w, nil
}
