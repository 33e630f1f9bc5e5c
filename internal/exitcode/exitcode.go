// Package exitcode holds the exit codes of the project's command lines
// (datumctl-compute and compute-local) and Error, the error that carries one
// and may name the fix. It is a leaf: the CLIs' shared helpers
// (internal/cli/cmdutil) re-export it under their historical names, and a
// program that needs only the codes imports it without them.
package exitcode

import (
	"errors"
	"fmt"
)

// Exit codes of the project's command lines. They are part of the CLIs'
// contract: scripts branch on them. compute-local uses OK, Failure and Usage
// and gives 3 a meaning of its own.
const (
	// OK: the command did what was asked.
	OK = 0
	// Failure: the command failed — an API error, a rejected manifest,
	// an instance that reached a terminal failure, a refused entitlement.
	Failure = 1
	// Usage: the command line was wrong — unknown command or flag, a
	// missing argument, a malformed flag value, or a confirmation that is
	// needed but cannot be asked (no terminal and no --yes).
	Usage = 2
	// Pending: not done yet — a wait reached its --timeout, or compute
	// is still being activated for the project. Running the command again
	// later may succeed.
	Pending = 3
	// Interrupted: the user pressed Ctrl-C while the command waited;
	// whatever it started continues on the server.
	Interrupted = 130
)

// Error is an error that decides the exit code and may name the fix.
type Error struct {
	// Code is the process exit code.
	Code int
	// Err is what went wrong.
	Err error
	// Hints say what to do next, one per line.
	Hints []string
}

// Error returns the message of the wrapped error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// UsageErrorf returns an error exiting with Usage.
func UsageErrorf(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// PendingErrorf returns an error exiting with Pending.
func PendingErrorf(format string, args ...any) error {
	return &Error{Code: Pending, Err: fmt.Errorf(format, args...)}
}

// Failf returns an error exiting with Failure.
func Failf(format string, args ...any) error {
	return &Error{Code: Failure, Err: fmt.Errorf(format, args...)}
}

// WithHints returns err with hints added; err keeps its exit code (Failure
// when it had none).
func WithHints(err error, hints ...string) error {
	if err == nil {
		return nil
	}
	var ee *Error
	if errors.As(err, &ee) {
		out := *ee
		out.Hints = append(append([]string(nil), ee.Hints...), hints...)
		return &out
	}
	return &Error{Code: Failure, Err: err, Hints: hints}
}

// ErrInterrupted is the cause of a command context cancelled by Ctrl-C
// (SIGINT or SIGTERM).
var ErrInterrupted = errors.New("interrupted")

// Of returns the exit code err maps to: OK for nil, an Error's own code,
// Interrupted for ErrInterrupted, Failure otherwise.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, ErrInterrupted) {
		return Interrupted
	}
	return Failure
}
