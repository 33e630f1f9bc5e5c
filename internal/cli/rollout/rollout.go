// Package rollout implements `datumctl compute rollout`: status (wait for
// a rollout like `kubectl rollout status`), history (the server-side
// template revisions) and undo (return to an earlier revision). `rollout
// restart` is the same command as the top-level `restart`.
package rollout

import (
	"github.com/spf13/cobra"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

// NewCommand returns the rollout command group. restart is the restart
// command to offer as `rollout restart` too.
func NewCommand(f *cmdutil.Factory, restart *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Watch, list and undo a workload's rollouts",
		Long: "Every change of a workload's template (image, command, environment, restart, ...) is a rollout:\n" +
			"instances are replaced one at a time, city by city. The server keeps each template as a revision,\n" +
			"whichever client made the change, so history and undo work for changes made with kubectl or GitOps too.",
		Args: cmdutil.UnknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.UsageErrorf("rollout needs a subcommand: status, history, undo or restart")
		},
	}
	cmd.AddCommand(NewStatusCommand(f), NewHistoryCommand(f), NewUndoCommand(f))
	if restart != nil {
		cmd.AddCommand(restart)
	}
	return cmd
}
