package cmdutil

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// noKubeconfig points client-go's default kubeconfig lookups at an empty
// home, as on a fresh machine.
func noKubeconfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "absent"))
	t.Setenv("KUBERNETES_MASTER", "")
}

// errorText is what PrintError shows for err.
func errorText(err error) string {
	var b bytes.Buffer
	PrintError(&b, err)
	return b.String()
}

func TestFirstRunWithoutKubeconfigNamesTheFix(t *testing.T) {
	noKubeconfig(t)
	// Before, cli-runtime's fallback to localhost:8080 made the first
	// command say only "dial tcp 127.0.0.1:8080: connect: connection
	// refused".
	f := &Factory{Getenv: func(string) string { return "" }}
	_, err := f.Clients()
	if err == nil {
		t.Fatal("Clients() connected with no kubeconfig and no Datum context")
	}
	want := "Error: no cluster to talk to: no kubeconfig, and datumctl did not run this command\n" +
		"  → Run `datumctl login`, then run it as `datumctl compute ...`,\n" +
		"  → or pass --kubeconfig (compute-local up prints one).\n"
	if diff := cmp.Diff(want, errorText(err)); diff != "" {
		t.Errorf("first-run error (-want +got):\n%s", diff)
	}
	if ExitCode(err) != ExitFailure {
		t.Errorf("exit code %d, want %d", ExitCode(err), ExitFailure)
	}
}

func TestServerFlagIsEnoughWithoutKubeconfig(t *testing.T) {
	noKubeconfig(t)
	f := &Factory{Getenv: func(string) string { return "" }}
	server := "https://127.0.0.1:1"
	f.ConfigFlags().APIServer = &server
	c, err := f.Clients()
	if err != nil {
		t.Fatalf("--server without a kubeconfig: %v", err)
	}
	if c.Config.Host != server {
		t.Errorf("host %q, want %q", c.Config.Host, server)
	}
}

func TestUnreachableServerNamesHostAndFlag(t *testing.T) {
	noKubeconfig(t)
	// A port nothing listens on: the connection is refused.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: lab
  context: {cluster: c, user: u, namespace: apps}
current-context: lab
users:
- name: u
  user: {token: t}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &Factory{Getenv: func(string) string { return "" }, Kubeconfig: kubeconfig}
	c, err := f.Clients()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Client.List(context.Background(), &computev1alpha.WorkloadList{})
	if err == nil {
		t.Fatal("listing from a closed port succeeded")
	}
	got := errorText(f.ExplainUnreachable(err))
	for _, want := range []string{
		"connection refused",
		"  → Cannot reach https://127.0.0.1:1, the server context \"lab\" of " + kubeconfig + " names.\n",
		"  → Point at another cluster with --kubeconfig or --context (or --server).\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the error does not say %q:\n%s", want, got)
		}
	}

	// Under datumctl the host comes from DATUM_API_HOST.
	env := map[string]string{EnvAPIHost: "http://127.0.0.1:1", EnvPluginAPIVersion: "1", EnvProject: "p", EnvCredentialsHelper: "datumctl"}
	f = &Factory{Getenv: func(k string) string { return env[k] },
		Run: func(context.Context, string, ...string) ([]byte, error) { return []byte("token"), nil }}
	if c, err = f.Clients(); err != nil {
		t.Fatal(err)
	}
	err = c.Client.List(context.Background(), &computev1alpha.WorkloadList{})
	got = errorText(f.ExplainUnreachable(err))
	want := "  → Cannot reach http://127.0.0.1:1/apis/resourcemanager.miloapis.com/v1alpha1/projects/p/control-plane, the Datum API host datumctl gave ($DATUM_API_HOST).\n"
	if !strings.Contains(got, want) {
		t.Errorf("the error does not say %q:\n%s", want, got)
	}

	// An answer from the server is not a reachability problem.
	if got := f.ExplainUnreachable(context.Canceled); got != context.Canceled { //nolint:errorlint // the very error must come back
		t.Errorf("a non-network error was changed: %v", got)
	}
}
