package cli_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// columnGap matches the spaces between the columns of an aligned table.
var columnGap = regexp.MustCompile(` {3,}`)

// cells turns an aligned table into tab-separated cells, for tests that
// look for a row (an empty cell disappears).
func cells(table string) string { return columnGap.ReplaceAllString(table, "\t") }

// mustContain fails the test unless s contains every want.
func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func TestDeployCreatesAWorkloadAndWaitsForEveryCity(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)

	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR", "--min", "2", "--port", "http:8080")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout,
		"Create workload web in namespace "+h.Namespace,
		"cities         DFW ×2, LHR ×2 (4 instances)",
		"web is rolled out (revision 1): DFW 2/2 ready · LHR 2/2 ready")

	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	if got := w.Annotations["kubernetes.io/change-cause"]; got != "deploy web --city=DFW,LHR --image=ghcr.io/acme/web:1.0 --min=2 --port=http:8080" {
		t.Errorf("change cause %q", got)
	}

	again := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0")
	if again.Code != cmdutil.ExitOK || !strings.Contains(again.Stdout, "web is up to date: nothing to deploy") {
		t.Errorf("deploying the same thing again changes nothing: %+v", again)
	}
}

// TestDeployRefusesACityThatIsNotEnabledAndListsTheEnabledOnes runs on the
// live plane: the server's admission webhooks check the cities, and the
// CLI names the flag that set the field the server refused.
func TestDeployRefusesACityThatIsNotEnabledAndListsTheEnabledOnes(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)

	for _, dryRun := range []string{"none", "server"} {
		res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,NRT", "--dry-run="+dryRun)
		if res.Code != cmdutil.ExitFailure {
			t.Fatalf("--dry-run=%s: exit %d, want 1: %+v", dryRun, res.Code, res)
		}
		mustContain(t, "stderr", res.Stderr, "Error: workload web is not valid:\n  --city NRT: city NRT is not enabled for this project; enabled cities: DFW, LHR, SIN")
	}
	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--instance-type", "datumcloud/d9-huge")
	if res.Code != cmdutil.ExitFailure {
		t.Fatalf("an unknown instance type: exit %d, want 1: %+v", res.Code, res)
	}
	mustContain(t, "stderr", res.Stderr, "  --instance-type datumcloud/d9-huge: supported values: ", "→ Instance types: ", "(datumctl-compute instance-types)")
	var list computev1alpha.WorkloadList
	if err := h.Client.List(context.Background(), &list, client.InNamespace(h.Namespace)); err != nil || len(list.Items) != 0 {
		t.Errorf("nothing may be created: %v %v", list.Items, err)
	}
}

// TestDeployServerDryRunPrintsTheServersDefaultedWorkload runs on the live
// plane, where admission defaults the workload: the dry run prints what
// the server would store, and its warnings, and stores nothing.
func TestDeployServerDryRunPrintsTheServersDefaultedWorkload(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	if _, err := clitest.EnsureLocation(h.Ctx(), h.Client, "YUL", false); err != nil {
		t.Fatal(err)
	}
	h.BindCities("YUL")

	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,YUL", "--dry-run=server", "-o", "yaml")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stderr", res.Stderr, "Create workload web", "DFW ×1, YUL ×1 (2 instances)",
		"Warning: Location yul (YUL) is bound but not ready", "Server dry run: the server accepted the change; nothing was stored.")
	// Admission's defaults and its rewrite of cityCodes into a selector.
	mustContain(t, "stdout", res.Stdout, "revisionHistoryLimit: 10", "instanceManagementPolicy: OrderedReady",
		"key: topology.datum.net/city-code", "- DFW", "- YUL")
	if strings.Contains(res.Stdout, "cityCodes") {
		t.Errorf("the server's answer keeps cityCodes:\n%s", res.Stdout)
	}
	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); !apierrors.IsNotFound(err) {
		t.Fatalf("a server dry run stored the workload: %v", err)
	}
}

// tripwire is an API server that fails the test on any request: a command
// run against it must send nothing.
func tripwire(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("--dry-run=client sent %s %s", r.Method, r.URL.Path)
		http.Error(w, "no request expected", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// offlineWorkload checks what deploy --dry-run=client -o yaml printed: the
// Workload of the flags, as YAML, in namespace ns, rendered offline.
func offlineWorkload(t *testing.T, what string, res clitest.Result, ns string) {
	t.Helper()
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("%s: exit %d: %s", what, res.Code, res.Stderr)
	}
	mustContain(t, what+": stderr", res.Stderr, "Workload web for namespace "+ns, "built offline", "cities         DFW ×1 (1 instance)",
		"Dry run: nothing was changed.")
	var w computev1alpha.Workload
	if err := yaml.UnmarshalStrict([]byte(res.Stdout), &w); err != nil {
		t.Fatalf("%s: stdout is not a Workload in YAML: %v\n%s", what, err, res.Stdout)
	}
	if w.Kind != "Workload" || w.APIVersion != computev1alpha.GroupVersion.String() || w.Name != "web" || w.Namespace != ns ||
		len(w.Spec.Placements) != 1 || strings.Join(w.Spec.Placements[0].CityCodes, ",") != "DFW" ||
		w.Spec.Template.Spec.Runtime.Sandbox == nil || w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image != "ghcr.io/acme/web:1.0" {
		t.Errorf("%s: not the workload of the flags:\n%s", what, res.Stdout)
	}
}

// TestDeployClientDryRunSendsNothing renders the workload of the flags as
// YAML with a kubeconfig whose server fails the test on any request, under
// datumctl with a project API that does the same (and no token to be
// had), and with no cluster at all: datumctl not logged in.
func TestDeployClientDryRunSendsNothing(t *testing.T) {
	t.Parallel()
	h := harness(t)
	srv := tripwire(t)
	kubeconfig := filepath.Join(t.TempDir(), "tripwire.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: trip, cluster: {server: "`+srv.URL+`"}}]
users: [{name: me, user: {token: t}}]
contexts: [{name: trip, context: {cluster: trip, user: me}}]
current-context: trip
`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--dry-run=client", "-o", "yaml"}
	standalone := clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig = kubeconfig }}
	offlineWorkload(t, "a kubeconfig", h.Run(main, standalone, flags...), h.Namespace)

	noToken := func(context.Context, string, ...string) ([]byte, error) {
		t.Error("--dry-run=client asked datumctl for a token")
		return nil, errors.New("no token")
	}
	datumctl := func(env map[string]string) clitest.RunOptions {
		return clitest.RunOptions{Env: env, Factory: func(f *cmdutil.Factory) { f.Kubeconfig, f.Namespace, f.Run = "", "", noToken }}
	}
	loggedIn := datumctl(map[string]string{cmdutil.EnvAPIHost: srv.URL, cmdutil.EnvProject: "p1",
		cmdutil.EnvCredentialsHelper: "/opt/datumctl", cmdutil.EnvPluginAPIVersion: "1"})
	offlineWorkload(t, "under datumctl", h.Run(main, loggedIn, flags...), cmdutil.DefaultNamespace)
	loggedOut := datumctl(map[string]string{cmdutil.EnvPluginAPIVersion: "1"})
	offlineWorkload(t, "logged out", h.Run(main, loggedOut, append(flags, "-n", "team")...), "team")
	if res := h.Run(main, loggedOut, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--dry-run=server"); res.Code != cmdutil.ExitFailure ||
		!strings.Contains(res.Stderr, "not logged in") {
		t.Errorf("--dry-run=server logged out: exit %d, want 1 and \"not logged in\": %s", res.Code, res.Stderr)
	}

	if bad := h.Run(main, standalone, "deploy", "web", "--image", "ghcr.io/acme/web:2.0", "--dry-run=client"); bad.Code != cmdutil.ExitUsage {
		t.Errorf("a change without --city: exit %d, want a usage error: %s", bad.Code, bad.Stderr)
	}
}

// TestDeployClientDryRunNeedsNoKubeconfig runs deploy --dry-run=client -o
// yaml with $KUBECONFIG naming a file that does not exist, as kubectl's
// runs: the workload is rendered; anything else still says there is no
// cluster. It sets the process environment, so it does not run in
// parallel.
func TestDeployClientDryRunNeedsNoKubeconfig(t *testing.T) {
	h := harness(t)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	none := clitest.RunOptions{Factory: func(f *cmdutil.Factory) { f.Kubeconfig = "" }}
	offlineWorkload(t, "no kubeconfig", h.Run(main, none,
		"deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--dry-run=client", "-o", "yaml"), h.Namespace)
	res := h.Run(main, none, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--dry-run=server")
	if res.Code != cmdutil.ExitFailure || !strings.Contains(res.Stderr, "no cluster to talk to") {
		t.Errorf("--dry-run=server with no kubeconfig: exit %d, want 1 and \"no cluster to talk to\": %s", res.Code, res.Stderr)
	}
}

func TestDeployDryRunShowsThePlanAndChangesNothing(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")
	h.CreateWorkload(clitest.NewWorkload("web").Placement("default", 1, "DFW").Build())

	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:2.0", "--env", "MODE=canary", "--dry-run")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "~ image: ghcr.io/acme/web:1.0 → ghcr.io/acme/web:2.0", "+ env MODE: canary",
		"Server dry run: the server accepted the change; nothing was stored.")
	var w computev1alpha.Workload
	_ = h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w)
	if img := w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image; img != "ghcr.io/acme/web:1.0" {
		t.Errorf("a dry run changed the image to %s", img)
	}
}

func TestDeployStopsAtItsTimeoutWithThePendingCode(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")

	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--timeout", "1s")
	if res.Code != cmdutil.ExitPending {
		t.Fatalf("exit %d, want 3: %+v", res.Code, res)
	}
	mustContain(t, "stderr", res.Stderr, "timed out after 1s waiting for web",
		"→ The rollout continues on the server. Keep watching with: datumctl compute rollout status web")
}

func TestCtrlCStopsTheWaitAndLeavesTheRolloutRunning(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(time.Second, func() { cancel(cmdutil.ErrInterrupted) })

	res := h.Run(main, clitest.RunOptions{Ctx: ctx}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW")
	if res.Code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d, want 130: %+v", res.Code, res)
	}
	mustContain(t, "stderr", res.Stderr, "stopped waiting for web", "The rollout continues on the server")
	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Errorf("the workload must stay: %v", err)
	}
}

func TestDeployFromAManifestOnStdinWithoutWaiting(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW", "LHR")
	manifest := `apiVersion: compute.datumapis.com/v1alpha
kind: Workload
metadata:
  name: api
  labels:
    team: payments
spec:
  template:
    spec:
      runtime:
        resources:
          instanceType: datumcloud/d1-standard-4
        sandbox:
          containers:
          - name: api
            image: ghcr.io/acme/api:3.1
  placements:
  - name: us
    cityCodes: [DFW]
    scaleSettings: {minReplicas: 1}
  - name: eu
    cityCodes: [LHR]
    scaleSettings: {minReplicas: 2, instanceManagementPolicy: Parallel}
`
	res := h.Run(main, clitest.RunOptions{Stdin: manifest}, "deploy", "-f", "-", "--detach")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "DFW ×1 (us), LHR ×2 (eu) (3 instances)", "policy         Parallel (placement eu)",
		"Deployed api. Watch the rollout with: datumctl compute rollout status api")
	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "api"}, &w); err != nil {
		t.Fatal(err)
	}
	if w.Labels["team"] != "payments" || w.Annotations["kubernetes.io/change-cause"] != "deploy -f -" {
		t.Errorf("metadata %v %v", w.Labels, w.Annotations)
	}
}

func TestDeployDryRunWithOutputYAMLWritesAManifestToKeep(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")

	dry := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--port", "8080", "--dry-run=client", "-o", "yaml")
	if dry.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", dry.Code, dry.Stderr)
	}
	if !strings.HasPrefix(dry.Stdout, "apiVersion: compute.datumapis.com/v1alpha\nkind: Workload\n") {
		t.Fatalf("stdout is the manifest:\n%s", dry.Stdout)
	}
	mustContain(t, "stderr", dry.Stderr, "Workload web for namespace", "Dry run: nothing was changed.")

	applied := h.Run(main, clitest.RunOptions{Stdin: dry.Stdout}, "deploy", "-f", "-", "--detach", "-o", "json")
	if applied.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", applied.Code, applied.Stderr)
	}
	mustContain(t, "stdout", applied.Stdout, `"kind": "Workload"`, `"uid": "`, `"name": "port-8080"`)
}

func TestDeployServerDryRunHasTheServerCheckTheChangeWithoutStoringIt(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")

	create := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--dry-run=server", "-o", "name")
	if create.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", create.Code, create.Stderr)
	}
	mustContain(t, "create", create.Stderr, "Server dry run: the server accepted the change; nothing was stored.")
	mustContain(t, "create", create.Stdout, "workload.compute.datumapis.com/web")
	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); !apierrors.IsNotFound(err) {
		t.Fatalf("a server dry run stored the workload: %v", err)
	}

	h.CreateWorkload(clitest.NewWorkload("web").Placement("default", 1, "DFW").Build())
	update := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:2.0", "--dry-run=server",
		"-o", "jsonpath={.spec.template.spec.runtime.sandbox.containers[0].image}")
	if update.Code != cmdutil.ExitOK || update.Stdout != "ghcr.io/acme/web:2.0" {
		t.Fatalf("exit %d, stdout %q: want the server's answer with the new image\n%s", update.Code, update.Stdout, update.Stderr)
	}
	_ = h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w)
	if img := w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image; img != "ghcr.io/acme/web:1.0" {
		t.Errorf("a server dry run changed the image to %s", img)
	}

	if bad := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "x", "--dry-run=later"); bad.Code != cmdutil.ExitUsage {
		t.Errorf("--dry-run=later: exit %d, want a usage error: %s", bad.Code, bad.Stderr)
	}
}

func TestDeployReadsSecretsAndConfigMapsFromFlagsAndChangesOnlyWhatIsGiven(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW")

	res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW", "--detach",
		"--env", "MODE=prod", "--env-from-secret", "DB_PASSWORD=db:password", "--env-from-configmap", "LOG_LEVEL=web-config:log-level",
		"--mount-secret", "tls:/etc/tls", "--mount-configmap", "web-config:/etc/web", "--pull-secret", "regcred")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "env            DB_PASSWORD from Secret db key password",
		"env            LOG_LEVEL from ConfigMap web-config key log-level", "mount          Secret tls at /etc/tls",
		"mount          ConfigMap web-config at /etc/web", "pull secret    regcred")
	spec := storedTemplate(t, h, "web")
	c := spec.Runtime.Sandbox.Containers[0]
	if len(c.Env) != 3 || c.Env[0].Value != "prod" || c.Env[1].ValueFrom.SecretKeyRef.Name != "db" || c.Env[1].ValueFrom.SecretKeyRef.Key != "password" ||
		c.Env[2].ValueFrom.ConfigMapKeyRef.Name != "web-config" || c.Env[2].ValueFrom.ConfigMapKeyRef.Key != "log-level" {
		t.Errorf("env %+v", c.Env)
	}
	if len(spec.Volumes) != 2 || spec.Volumes[0].Name != "secret-tls" || spec.Volumes[0].Secret.SecretName != "tls" ||
		spec.Volumes[1].Name != "configmap-web-config" || spec.Volumes[1].ConfigMap.Name != "web-config" {
		t.Errorf("volumes %+v", spec.Volumes)
	}
	if len(c.VolumeAttachments) != 2 || *c.VolumeAttachments[0].MountPath != "/etc/tls" || *c.VolumeAttachments[1].MountPath != "/etc/web" {
		t.Errorf("volume attachments %+v", c.VolumeAttachments)
	}

	dry := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--mount-secret", "tls-", "--pull-secret", "regcred-", "--dry-run")
	if dry.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", dry.Code, dry.Stderr)
	}
	mustContain(t, "stdout", dry.Stdout, "- mount secret-tls: /etc/tls", "- image pull secret: regcred", "- volume secret-tls: Secret tls",
		"Server dry run: the server accepted the change; nothing was stored.")

	update := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--detach", "--mount-secret", "tls-", "--pull-secret", "regcred-",
		"--env", "DB_PASSWORD-")
	if update.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", update.Code, update.Stderr)
	}
	spec = storedTemplate(t, h, "web")
	c = spec.Runtime.Sandbox.Containers[0]
	if len(spec.Volumes) != 1 || spec.Volumes[0].Name != "configmap-web-config" || len(c.VolumeAttachments) != 1 ||
		len(spec.Runtime.Sandbox.ImagePullSecrets) != 0 || len(c.Env) != 2 || c.Env[1].Name != "LOG_LEVEL" || c.Image != "ghcr.io/acme/web:1.0" {
		t.Errorf("only the mount, the pull secret and DB_PASSWORD may go: %+v", spec)
	}

	bad := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--mount-secret", "tls:etc/tls")
	if bad.Code != cmdutil.ExitUsage {
		t.Errorf("a relative mount path: exit %d, want a usage error: %s", bad.Code, bad.Stderr)
	}
	mustContain(t, "stderr", bad.Stderr, `--mount-secret "tls:etc/tls": the mount path "etc/tls" must be absolute`)
}

// storedTemplate reads the instance template of workload name.
func storedTemplate(t *testing.T, h *clitest.Harness, name string) *computev1alpha.InstanceSpec {
	t.Helper()
	var w computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: name}, &w); err != nil {
		t.Fatal(err)
	}
	return &w.Spec.Template.Spec
}

// TestDeployAppliesEveryWorkloadOfAMultiDocumentManifest runs on the live
// plane: the server's admission refuses the document in a city the project
// has not enabled.
func TestDeployAppliesEveryWorkloadOfAMultiDocumentManifest(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	doc := func(name, city string) string {
		return `apiVersion: compute.datumapis.com/v1alpha
kind: Workload
metadata:
  name: ` + name + `
spec:
  template:
    spec:
      runtime:
        sandbox:
          containers:
          - name: app
            image: ghcr.io/acme/` + name + `:1.0
  placements:
  - name: default
    cityCodes: [` + city + `]
    scaleSettings: {minReplicas: 1}
`
	}
	res := h.Run(main, clitest.RunOptions{Stdin: "# the shop\n---\n" + doc("web", "DFW") + "---\n" + doc("api", "LHR")}, "deploy", "-f", "-", "--detach")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout,
		"==> Workload 1 of 2: web (standard input document 1)", "Deployed web. Watch the rollout with",
		"==> Workload 2 of 2: api (standard input document 2)", "Deployed api. Watch the rollout with")
	if strings.Index(res.Stdout, "Deployed web.") > strings.Index(res.Stdout, "==> Workload 2 of 2") {
		t.Errorf("web is deployed before api is planned:\n%s", res.Stdout)
	}
	for _, name := range []string{"web", "api"} {
		var w computev1alpha.Workload
		if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: name}, &w); err != nil {
			t.Errorf("workload %s was not created: %v", name, err)
		}
	}

	// A file: the second document runs in a city the project does not
	// have; the first is deployed, the error names the second.
	path := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(path, []byte(doc("cart", "DFW")+"---\n"+doc("search", "NRT")), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := h.Run(main, clitest.RunOptions{}, "deploy", "-f", path, "--detach")
	if bad.Code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want 1:\n%s%s", bad.Code, bad.Stdout, bad.Stderr)
	}
	mustContain(t, "stderr", bad.Stderr, "Error: "+path+" document 2, workload search: workload search is not valid",
		"spec.placements[0].locationSelector",
		"→ Document 1 was deployed; fix this one and run the command again")
	var cart computev1alpha.Workload
	if err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "cart"}, &cart); err != nil {
		t.Errorf("the first document was not deployed: %v", err)
	}

	// NAME cannot pick one workload of several.
	if res := h.Run(main, clitest.RunOptions{}, "deploy", "cart", "-f", path); res.Code != cmdutil.ExitUsage {
		t.Errorf("NAME with a multi-document file: exit %d, want a usage error: %s", res.Code, res.Stderr)
	}
}
