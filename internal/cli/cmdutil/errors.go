package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/citycells/compute/internal/exitcode"
)

// Exit codes of datumctl-compute, under the names the commands use: they
// are internal/exitcode's, shared with compute-local. They are part of the
// CLI's contract: scripts branch on them.
const (
	// ExitOK: the command did what was asked (exitcode.OK).
	ExitOK = exitcode.OK
	// ExitFailure: the command failed (exitcode.Failure).
	ExitFailure = exitcode.Failure
	// ExitUsage: the command line was wrong (exitcode.Usage).
	ExitUsage = exitcode.Usage
	// ExitPending: not done yet (exitcode.Pending).
	ExitPending = exitcode.Pending
	// ExitInterrupted: the user pressed Ctrl-C while the command waited
	// (exitcode.Interrupted).
	ExitInterrupted = exitcode.Interrupted
)

// ExitCodeDoc documents one exit code.
type ExitCodeDoc struct {
	// Code is the exit code.
	Code int
	// Meaning says when it is returned.
	Meaning string
}

// ExitCodes documents every exit code, for help and docs.
func ExitCodes() []ExitCodeDoc {
	return []ExitCodeDoc{
		{ExitOK, "success"},
		{ExitFailure, "failure: an API error, an invalid workload, an instance that failed (the message says what to do)"},
		{ExitUsage, "usage error: unknown command or flag, missing argument, or a confirmation needed without a terminal (pass --yes)"},
		{ExitPending, "not done yet: a wait reached --timeout, or compute is still being activated for the project; try again later"},
		{ExitInterrupted, "interrupted with Ctrl-C while waiting; what was started continues on the server"},
	}
}

// ExitError is an error that decides the exit code and may name the fix.
type ExitError = exitcode.Error

// UsageErrorf returns an error exiting with ExitUsage.
func UsageErrorf(format string, args ...any) error {
	return exitcode.UsageErrorf(format, args...)
}

// PendingErrorf returns an error exiting with ExitPending.
func PendingErrorf(format string, args ...any) error {
	return exitcode.PendingErrorf(format, args...)
}

// Failf returns an error exiting with ExitFailure.
func Failf(format string, args ...any) error {
	return exitcode.Failf(format, args...)
}

// WithHints returns err with hints added; err keeps its exit code (failure
// when it had none).
func WithHints(err error, hints ...string) error { return exitcode.WithHints(err, hints...) }

// ErrInterrupted is the cause of a command context cancelled by Ctrl-C
// (SIGINT or SIGTERM).
var ErrInterrupted = exitcode.ErrInterrupted

// Interrupted reports whether ctx was cancelled by Ctrl-C.
func Interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrInterrupted)
}

// ExitCode returns the exit code err maps to.
func ExitCode(err error) int { return exitcode.Of(err) }

// PrintError writes err and its hints to w the way every command reports
// failure: "Error: <message>", then each hint as "  → <hint>".
func PrintError(w io.Writer, err error) {
	msg := strings.TrimSpace(err.Error())
	_, _ = fmt.Fprintf(w, "Error: %s\n", msg)
	var ee *ExitError
	if errors.As(err, &ee) {
		for _, h := range ee.Hints {
			_, _ = fmt.Fprintf(w, "  → %s\n", h)
		}
	}
}
