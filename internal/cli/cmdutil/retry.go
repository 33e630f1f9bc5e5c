package cmdutil

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transient reports whether err is worth retrying — the server is busy
// (429), failing (5xx), restarting or out of reach (connection refused or
// reset, a timeout, a dropped stream) — and returns a short reason for the
// "reconnecting…" line. Errors that retrying cannot fix (forbidden, not
// found, invalid, a credentials helper that cannot log in) are not
// transient. A 401 is neither: see Unauthorized.
func Transient(err error) (reason string, ok bool) {
	if err == nil {
		return "", false
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return "", false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		switch {
		case apierrors.IsTooManyRequests(err):
			return "the server is busy (429)", true
		case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
			return "the server timed out", true
		case code >= http.StatusInternalServerError, apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
			return "the server answered " + http.StatusText(code) + " (" + strconv.Itoa(code) + ")", true
		}
		return "", false
	}
	switch {
	case utilnet.IsConnectionRefused(err):
		return "connection refused", true
	case utilnet.IsConnectionReset(err):
		return "connection reset", true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), utilnet.IsProbableEOF(err),
		strings.Contains(err.Error(), serverClosedIdle):
		return "connection closed", true
	case errors.Is(err, context.DeadlineExceeded):
		return "the request timed out", true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "the request timed out", true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "cannot reach the server: " + strings.TrimSpace(op.Err.Error()), true
	}
	return "", false
}

// serverClosedIdle is net/http's unexported error for a request sent on a
// kept-alive connection the server closed at that moment (a restart, or a
// proxy dropping its connections). net/http retries it only for requests it
// can replay on its own; a watch reopened through a wrapping transport sees
// it.
const serverClosedIdle = "http: server closed idle connection"

// Unauthorized reports whether the server rejected the credentials (401).
// The Datum token source forgets the rejected token, so one retry asks the
// credentials helper for a fresh one; a second 401 in a row means the
// login itself is gone.
func Unauthorized(err error) bool { return apierrors.IsUnauthorized(err) }
