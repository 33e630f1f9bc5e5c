// Package rollout implements `datumctl compute rollout`: status (wait for
// a rollout like `kubectl rollout status`, wave by wave), history (the
// server-side template revisions), undo (return to an earlier revision),
// and pause, resume and approve for a rollout across cities in waves. `rollout
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
		Short: "Watch, pause, approve, list and undo a workload's rollouts",
		Long: "Every change of a workload's template (image, command, environment, restart, ...) is a rollout.\n" +
			"Inside a city instances are replaced a few at a time (rolloutStrategy.maxUnavailable). Across cities the\n" +
			"change reaches every city at once unless the workload sets spec.rollout: explicit waves of cities, or a\n" +
			"canary city first, with a soak time, a progress deadline, and an automatic halt (and optional rollback)\n" +
			"when a city fails. The server keeps each template as a revision, whichever client made the change, so\n" +
			"history and undo work for changes made with kubectl or GitOps too.",
		Args: cmdutil.UnknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.UsageErrorf("rollout needs a subcommand: status, history, undo, pause, resume, approve or restart")
		},
	}
	cmd.AddCommand(NewStatusCommand(f), NewHistoryCommand(f), NewUndoCommand(f),
		NewPauseCommand(f), NewResumeCommand(f), NewApproveCommand(f))
	if restart != nil {
		cmd.AddCommand(restart)
	}
	return cmd
}
