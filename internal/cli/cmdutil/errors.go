package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes of datumctl-compute. They are part of the CLI's contract:
// scripts branch on them.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: the command failed — an API error, a rejected manifest,
	// an instance that reached a terminal failure, a refused entitlement.
	ExitFailure = 1
	// ExitUsage: the command line was wrong — unknown command or flag, a
	// missing argument, a malformed flag value, or a confirmation that is
	// needed but cannot be asked (no terminal and no --yes).
	ExitUsage = 2
	// ExitPending: not done yet — a wait reached its --timeout, or compute
	// is still being activated for the project. Running the command again
	// later may succeed.
	ExitPending = 3
	// ExitInterrupted: the user pressed Ctrl-C while the command waited;
	// whatever it started continues on the server.
	ExitInterrupted = 130
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
type ExitError struct {
	// Code is the process exit code.
	Code int
	// Err is what went wrong.
	Err error
	// Hints say what to do next, one per line.
	Hints []string
}

// Error returns the message of the wrapped error.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ExitError) Unwrap() error { return e.Err }

// UsageErrorf returns an error exiting with ExitUsage.
func UsageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// PendingErrorf returns an error exiting with ExitPending.
func PendingErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitPending, Err: fmt.Errorf(format, args...)}
}

// Failf returns an error exiting with ExitFailure.
func Failf(format string, args ...any) error {
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf(format, args...)}
}

// WithHints returns err with hints added; err keeps its exit code (failure
// when it had none).
func WithHints(err error, hints ...string) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		out := *ee
		out.Hints = append(append([]string(nil), ee.Hints...), hints...)
		return &out
	}
	return &ExitError{Code: ExitFailure, Err: err, Hints: hints}
}

// ErrInterrupted is the cause of a command context cancelled by Ctrl-C
// (SIGINT or SIGTERM).
var ErrInterrupted = errors.New("interrupted")

// Interrupted reports whether ctx was cancelled by Ctrl-C.
func Interrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrInterrupted)
}

// ExitCode returns the exit code err maps to.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted
	}
	return ExitFailure
}

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
