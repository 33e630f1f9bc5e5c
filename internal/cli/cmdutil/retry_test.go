package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransientErrorsAreThoseRetryingCanFix(t *testing.T) {
	gr := schema.GroupResource{Group: "compute.datumapis.com", Resource: "workloads"}
	dial := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &os.SyscallError{Syscall: "connect", Err: errno}}}
	}
	for name, tc := range map[string]struct {
		err       error
		transient bool
	}{
		"429 too many requests":   {apierrors.NewTooManyRequests("slow down", 1), true},
		"503 service unavailable": {apierrors.NewServiceUnavailable("restarting"), true},
		"500 internal error":      {apierrors.NewInternalError(errors.New("etcd")), true},
		"504 server timeout":      {apierrors.NewServerTimeout(gr, "list", 1), true},
		"a refused connection":    {dial(syscall.ECONNREFUSED), true},
		"a reset connection":      {dial(syscall.ECONNRESET), true},
		"a dropped stream":        {fmt.Errorf("watch: %w", io.ErrUnexpectedEOF), true},
		"a kept-alive connection the server closed": {&url.Error{Op: "Get", URL: "https://x",
			Err: errors.New("http: server closed idle connection")}, true},
		"a request timeout":           {fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		"403 forbidden":               {apierrors.NewForbidden(gr, "web", errors.New("no")), false},
		"404 not found":               {apierrors.NewNotFound(gr, "web"), false},
		"401 is decided elsewhere":    {apierrors.NewUnauthorized("expired"), false},
		"the helper cannot log in":    {fmt.Errorf("get: %w", &ExitError{Code: ExitFailure, Err: errors.New("not logged in")}), false},
		"an error nobody can explain": {errors.New("boom"), false},
	} {
		t.Run(name, func(t *testing.T) {
			reason, ok := Transient(tc.err)
			if ok != tc.transient || (ok && reason == "") {
				t.Errorf("Transient(%v) = %q, %v; want transient %v with a reason", tc.err, reason, ok, tc.transient)
			}
		})
	}
}
