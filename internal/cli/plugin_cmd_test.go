package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// projectAPI stands in for the Datum API: it serves the project plane
// under /apis/resourcemanager.miloapis.com/v1alpha1/projects/<project>/control-plane
// to requests that carry the expected bearer token.
func projectAPI(t *testing.T, project, token string) (*httptest.Server, *[]string) {
	t.Helper()
	return projectAPIAccepting(t, clitest.ProjectPlane, project, func(got string) bool { return got == token })
}

// projectAPIAccepting is projectAPI with the tokens it accepts decided
// by accept, which may change its answer over time (a token expiring),
// in front of plane.
func projectAPIAccepting(t *testing.T, plane, project string, accept func(token string) bool) (*httptest.Server, *[]string) {
	t.Helper()
	cfg := env.Plane(plane).Config()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(cfg.Host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.ErrorLog = log.New(io.Discard, "", 0) // requests the CLI cancels
	prefix := "/apis/resourcemanager.miloapis.com/v1alpha1/projects/" + project + "/control-plane"
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || !accept(tok) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		paths = append(paths, rest)
		mu.Unlock()
		r.Header.Del("Authorization")
		r.URL.Path = rest
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &paths
}

func TestUnderDatumctlTheProjectControlPlaneIsUsedWithTheHelpersToken(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	srv, paths := projectAPI(t, "p1", "tok-abc")
	var helperCalls [][]string
	env := map[string]string{
		cmdutil.EnvAPIHost: srv.URL, cmdutil.EnvProject: "p1", cmdutil.EnvOrg: "acme",
		cmdutil.EnvCredentialsHelper: "/opt/datumctl", cmdutil.EnvSession: "work", cmdutil.EnvPluginAPIVersion: "1",
	}
	res := h.Run(main, clitest.RunOptions{Env: env, Factory: func(f *cmdutil.Factory) {
		f.Kubeconfig, f.Name = "", ""
		f.Run = func(_ context.Context, name string, args ...string) ([]byte, error) {
			helperCalls = append(helperCalls, append([]string{name}, args...))
			return []byte("tok-abc\n"), nil
		}
	}}, "workloads", "-o", "json")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil || len(list.Items) != 1 || list.Items[0].Metadata.Name != "web" {
		t.Fatalf("want web through the project API: %v\n%s", err, res.Stdout)
	}
	if len(helperCalls) != 1 || strings.Join(helperCalls[0], " ") != "/opt/datumctl auth get-token --session work" {
		t.Errorf("helper calls %v", helperCalls)
	}
	if len(*paths) == 0 || !strings.Contains(strings.Join(*paths, " "), "/apis/compute.datumapis.com/v1alpha/namespaces/"+h.Namespace+"/workloads") {
		t.Errorf("requests %v", *paths)
	}

	missing := h.Run(main, clitest.RunOptions{Env: env, Factory: func(f *cmdutil.Factory) {
		f.Kubeconfig, f.Name = "", ""
		f.Run = func(context.Context, string, ...string) ([]byte, error) { return []byte("tok-abc"), nil }
	}}, "status", "nope")
	mustContain(t, "hints under datumctl", missing.Stderr, "→ List the workloads with: datumctl compute workloads")

	noProject := h.Run(main, clitest.RunOptions{Env: map[string]string{cmdutil.EnvAPIHost: srv.URL}, Factory: func(f *cmdutil.Factory) {
		f.Kubeconfig = ""
	}}, "workloads")
	if noProject.Code != cmdutil.ExitUsage || !strings.Contains(noProject.Stderr, "no Datum project is selected") {
		t.Errorf("%+v", noProject)
	}
}

func TestTheCommandLineIsCheckedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	h := harness(t)
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
		want     string
	}{
		"the plugin manifest is answered first":  {[]string{"--plugin-manifest", "--bogus"}, cmdutil.ExitOK, `"api_version": 1`},
		"a misspelt command gets a suggestion":   {[]string{"stauts"}, cmdutil.ExitUsage, "did you mean status?"},
		"an unknown flag is a usage error":       {[]string{"workloads", "--all"}, cmdutil.ExitUsage, "unknown flag: --all"},
		"a missing name is a usage error":        {[]string{"status"}, cmdutil.ExitUsage, "needs NAME"},
		"usage errors point at --help":           {[]string{"scale", "web"}, cmdutil.ExitUsage, "Run 'datumctl compute scale --help' for usage."},
		"version needs no server":                {[]string{"version", "--kubeconfig", "/nonexistent"}, cmdutil.ExitOK, "datumctl-compute v0.0.0-test"},
		"completion prints a script":             {[]string{"completion", "bash"}, cmdutil.ExitOK, "bash completion"},
		"help lists the exit codes":              {[]string{"--help"}, cmdutil.ExitOK, "130  interrupted with Ctrl-C"},
		"a kubeconfig that does not exist fails": {[]string{"workloads", "--kubeconfig", "/nonexistent"}, cmdutil.ExitFailure, "Check --kubeconfig and --context."},
	} {
		t.Run(name, func(t *testing.T) {
			res := h.Run(main, clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig = "" }}, tc.args...)
			if res.Code != tc.wantCode || !strings.Contains(res.Stdout+res.Stderr, tc.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", res.Code, tc.wantCode, tc.want, res.Stdout, res.Stderr)
			}
		})
	}
}

// loggedOutEnv is what datumctl sets when nobody is logged in: the plugin
// API version and the helper, but no API host and no project.
func loggedOutEnv() map[string]string {
	return map[string]string{
		cmdutil.EnvPluginAPIVersion: "1", cmdutil.EnvAPIHost: "", cmdutil.EnvProject: "", cmdutil.EnvOrg: "",
		cmdutil.EnvCredentialsHelper: "/usr/local/bin/datumctl", cmdutil.EnvSession: "",
	}
}

// Not parallel: it points $KUBECONFIG at a live cluster, as a user's shell
// would, to prove the plugin does not fall back to it.
func TestUnderDatumctlWithoutALoginTheCommandRefusesInsteadOfUsingKubeconfig(t *testing.T) {
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	t.Setenv("KUBECONFIG", h.Kubeconfig)
	res := h.Run(main, clitest.RunOptions{Env: loggedOutEnv(), Factory: func(f *cmdutil.Factory) {
		f.Kubeconfig, f.Name = "", ""
	}}, "workloads", "-o", "json")
	if res.Code != cmdutil.ExitFailure || strings.Contains(res.Stdout, "web") {
		t.Fatalf("exit %d, stdout %q: want a refusal, not the workloads of $KUBECONFIG", res.Code, res.Stdout)
	}
	mustContain(t, "the refusal", res.Stderr, "Error: not logged in — run `datumctl login`")
	if strings.Contains(res.Stderr, "auth login") {
		t.Errorf("the hint names a command datumctl no longer has:\n%s", res.Stderr)
	}

	explicit := h.Run(main, clitest.RunOptions{Env: loggedOutEnv(), Factory: func(f *cmdutil.Factory) { f.Name = "" }},
		"workloads", "-o", "json")
	if explicit.Code != cmdutil.ExitOK || !strings.Contains(explicit.Stdout, `"web"`) {
		t.Errorf("an explicit --kubeconfig still works without a login: exit %d\n%s%s", explicit.Code, explicit.Stdout, explicit.Stderr)
	}
}

func TestTheManifestAsksForTheFirstDatumctlWithPluginDispatch(t *testing.T) {
	t.Parallel()
	h := harness(t)
	res := h.Run(main, clitest.RunOptions{Env: loggedOutEnv()}, "--plugin-manifest")
	var m struct {
		Min string `json:"min_datumctl_version"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &m); err != nil || m.Min != "v0.15.0" {
		t.Errorf("min_datumctl_version = %q (%v), want v0.15.0", m.Min, err)
	}
}

// datumctl asks a managed install (…/plugins/compute) for --help without
// any DATUM_* variable: the invoked name is all there is.
func TestHelpOfAManagedInstallNamesDatumctlCompute(t *testing.T) {
	t.Parallel()
	h := harness(t)
	for argv0, want := range map[string]string{
		"/home/u/.datumctl/plugins/compute":        "datumctl compute workloads",
		`C:\Users\u\.datumctl\plugins\compute.exe`: "datumctl compute workloads",
		"/usr/local/bin/datumctl-compute":          "datumctl-compute workloads",
	} {
		res := h.Run(main, clitest.RunOptions{Env: map[string]string{}, Factory: func(f *cmdutil.Factory) {
			f.Name = cli.ProgramName(argv0)
		}}, "workloads", "--help")
		if res.Code != cmdutil.ExitOK || !strings.Contains(res.Stdout, "Usage:\n  "+want) {
			t.Errorf("argv[0] %s: want usage of %q, got exit %d:\n%s", argv0, want, res.Code, res.Stdout)
		}
	}
}

func TestKubectlConnectionFlagsApplyUnderDatumctlToo(t *testing.T) {
	t.Parallel()
	h := harness(t)
	srv, _ := projectAPI(t, "p1", "tok-abc")
	env := map[string]string{cmdutil.EnvAPIHost: srv.URL, cmdutil.EnvProject: "p1", cmdutil.EnvPluginAPIVersion: "1",
		cmdutil.EnvCredentialsHelper: "/usr/local/bin/datumctl"}
	run := func(args ...string) clitest.Result {
		return h.Run(main, clitest.RunOptions{Env: env, Factory: func(f *cmdutil.Factory) {
			f.Kubeconfig = ""
			f.Run = func(context.Context, string, ...string) ([]byte, error) { return []byte("tok-abc"), nil }
		}}, args...)
	}
	if res := run("workloads", "--as", "nobody@example.com"); res.Code != cmdutil.ExitFailure || !strings.Contains(res.Stderr, "nobody@example.com") {
		t.Errorf("--as impersonates (the API refuses the stranger): exit %d\n%s", res.Code, res.Stderr)
	}
	if res := run("workloads", "--request-timeout", "soon"); res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "--request-timeout") {
		t.Errorf("a malformed --request-timeout is a usage error: exit %d\n%s", res.Code, res.Stderr)
	}
	if res := run("workloads", "--request-timeout", "30s"); res.Code != cmdutil.ExitOK {
		t.Errorf("--request-timeout 30s: exit %d\n%s", res.Code, res.Stderr)
	}
}

// TestFirstRunWithoutAKubeconfigNamesTheFix is a fresh machine: no
// kubeconfig, not run by datumctl. Before, the first command printed only
// `dial tcp 127.0.0.1:8080: connect: connection refused` (cli-runtime's
// fallback server).
func TestFirstRunWithoutAKubeconfigNamesTheFix(t *testing.T) {
	h := harness(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "absent"))
	res := h.Run(main, clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig, f.Name = "", "" }}, "workloads")
	want := "Error: no cluster to talk to: no kubeconfig, and datumctl did not run this command\n" +
		"  → Run `datumctl login`, then run it as `datumctl compute ...`,\n" +
		"  → or pass --kubeconfig (compute-local up prints one).\n"
	if res.Code != cmdutil.ExitFailure || res.Stderr != want || res.Stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and:\n%s", res.Code, res.Stdout, res.Stderr, want)
	}

	// A kubeconfig whose server is down: the error names the host and the
	// flags that change it.
	down := filepath.Join(home, "down.yaml")
	if err := os.WriteFile(down, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n"+
		"contexts:\n- name: lab\n  context: {cluster: c, user: u}\ncurrent-context: lab\nusers:\n- name: u\n  user: {token: t}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = h.Run(main, clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig = down }}, "workloads")
	if res.Code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s", res.Code, res.Stderr)
	}
	mustContain(t, "the unreachable error", res.Stderr, "connection refused",
		"  → Cannot reach https://127.0.0.1:1, the server context \"lab\" of "+down+" names.",
		"  → Point at another cluster with --kubeconfig or --context (or --server).")
}
