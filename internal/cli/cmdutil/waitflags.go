package cmdutil

import (
	"time"

	"github.com/spf13/cobra"
)

// WaitFlags are --wait and --timeout of a command that starts something
// on the server and may wait for it to finish.
type WaitFlags struct {
	// Wait is --wait: wait for what the command started to finish.
	Wait bool
	// Timeout is --timeout: how long to wait.
	Timeout time.Duration
}

// NewWaitFlags returns the flags with timeout as --timeout's default.
func NewWaitFlags(timeout time.Duration) *WaitFlags {
	return &WaitFlags{Timeout: timeout}
}

// AddFlags binds --wait, described by waitUsage, and --timeout for it.
func (w *WaitFlags) AddFlags(cmd *cobra.Command, waitUsage string) {
	cmd.Flags().BoolVar(&w.Wait, "wait", false, waitUsage)
	w.AddTimeoutFlag(cmd, "How long --wait waits (exit 3 when it passes).")
}

// AddTimeoutFlag binds --timeout alone, described by usage, for commands
// whose waiting is asked for otherwise (--watch, or not --detach).
func (w *WaitFlags) AddTimeoutFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().DurationVar(&w.Timeout, "timeout", w.Timeout, usage)
}

// Validate rejects a timeout that is not positive.
func (w *WaitFlags) Validate() error {
	if w.Timeout <= 0 {
		return UsageErrorf("--timeout must be positive, got %s", w.Timeout)
	}
	return nil
}
