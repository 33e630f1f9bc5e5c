package cmdutil

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ExplainUnreachable adds to err, when the server could not be reached
// (refused, unknown host, timed out), a hint naming the host the CLI
// tried and the flag that changes it. Other errors are returned as they
// are.
func (f *Factory) ExplainUnreachable(err error) error {
	if err == nil || f.clients == nil || f.clients.Config == nil || !unreachable(err) {
		return err
	}
	host := f.clients.Config.Host
	if f.clients.Target.Context != "" || f.Kubeconfig != "" || ReadPluginContext(f.getenv).APIHost == "" {
		where := "your kubeconfig"
		if f.Kubeconfig != "" {
			where = f.Kubeconfig
		}
		if f.clients.Target.Context != "" {
			where = fmt.Sprintf("context %q of %s", f.clients.Target.Context, where)
		}
		if cf := f.ConfigFlags(); cf.APIServer != nil && *cf.APIServer != "" {
			where = "--server"
		}
		return WithHints(err,
			fmt.Sprintf("Cannot reach %s, the server %s names.", host, where),
			"Point at another cluster with --kubeconfig or --context (or --server).")
	}
	return WithHints(err,
		fmt.Sprintf("Cannot reach %s, the Datum API host datumctl gave ($%s).", host, EnvAPIHost),
		"Check your network, or `datumctl login` again; --kubeconfig talks to a cluster directly.")
}

// unreachable reports whether err says the server could not be reached,
// rather than answering.
func unreachable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue) && ue.Timeout()
}
