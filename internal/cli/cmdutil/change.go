package cmdutil

import (
	"time"

	"github.com/spf13/cobra"
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
