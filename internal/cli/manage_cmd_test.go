package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/restart"
)

func TestStatusWatchEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", nil)
	res := h.Run(main, clitest.RunOptions{}, "status", "web", "--watch", "--timeout", "500ms")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if res.Stdout != "web: Healthy — DFW 2/2 ready · LHR 2/2 ready\n" {
		t.Errorf("a pipe gets one line per change:\n%s", res.Stdout)
	}
}

func TestScaleEveryCityThenOneCity(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", nil)
	ctx := context.Background()

	res := h.Run(main, clitest.RunOptions{}, "scale", "web", "--city", "LHR", "--min", "5")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Scaled web in LHR to 5 instances.")
	h.Converge("web", nil)
	status := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false")
	mustContain(t, "rollout status", status.Stdout, "DFW 2/2 ready · LHR 5/5 ready")

	// Nothing converges in the background here: the wait times out.
	res = h.Run(main, clitest.RunOptions{}, "scale", "web", "--min", "3", "--wait", "--timeout", "1s")
	if res.Code != cmdutil.ExitPending {
		t.Errorf("a wait that times out exits 3, got %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Scaled web to 3 instances per city in DFW, LHR. LHR no longer keep their own number of instances.")
	var w computev1alpha.Workload
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	if w.Spec.Placements[0].ScaleSettings.MinReplicas != 3 {
		t.Errorf("minReplicas %d", w.Spec.Placements[0].ScaleSettings.MinReplicas)
	}
	var wds computev1alpha.WorkloadDeploymentList
	if err := h.Client.List(ctx, &wds, client.InNamespace(h.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, wd := range wds.Items {
		if wd.Spec.Replicas != nil {
			t.Errorf("%s still overrides replicas: %d", wd.Spec.CityCode, *wd.Spec.Replicas)
		}
	}

	notThere := h.Run(main, clitest.RunOptions{}, "scale", "web", "--city", "SIN", "--min", "1")
	if notThere.Code != cmdutil.ExitFailure || !strings.Contains(notThere.Stderr, "does not run in SIN; it runs in DFW, LHR") {
		t.Errorf("%+v", notThere)
	}
}

func TestRestartOneCitySurvivesLaterReconciles(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", nil)
	ctx := context.Background()
	stop := h.Controllers("web", clitest.Fixed(nil))

	res := h.Run(main, clitest.RunOptions{}, "restart", "web", "--city", "DFW", "--wait", "--timeout", "30s")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	stop()
	mustContain(t, "stdout", res.Stdout, "Restarting web in DFW", "Restarted web: DFW 2/2 ready · LHR 2/2 ready")

	restartedAt := func() map[string]string {
		var wds computev1alpha.WorkloadDeploymentList
		if err := h.Client.List(ctx, &wds, client.InNamespace(h.Namespace)); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, wd := range wds.Items {
			out[wd.Spec.CityCode] = wd.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
		}
		return out
	}
	var w computev1alpha.Workload
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	cityAt := w.Annotations[restart.CityRestartedAtAnnotation("DFW")]
	if cityAt == "" || w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] != "" {
		t.Fatalf("a city restart marks the workload, not its template: %v / %v", w.Annotations, w.Spec.Template.Metadata.Annotations)
	}
	if got := restartedAt(); got["DFW"] != cityAt || got["LHR"] != "" {
		t.Errorf("only DFW restarts: %v", got)
	}

	// A later change of the workload must keep DFW's restart.
	h.Run(main, clitest.RunOptions{}, "deploy", "web", "--env", "MODE=1", "--detach")
	h.Converge("web", nil)
	if got := restartedAt(); got["DFW"] != cityAt {
		t.Errorf("a reconcile dropped the city restart: %v", got)
	}

	whole := h.Run(main, clitest.RunOptions{}, "rollout", "restart", "web")
	if whole.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", whole.Code, whole.Stderr)
	}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Annotations[restart.CityRestartedAtAnnotation("DFW")]; ok {
		t.Errorf("a whole restart supersedes city restarts: %v", w.Annotations)
	}
	tplAt := w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
	h.Converge("web", nil)
	if got := restartedAt(); got["DFW"] != tplAt || got["LHR"] != tplAt {
		t.Errorf("a whole restart restarts every city: %v (want %s)", got, tplAt)
	}

	bad := h.Run(main, clitest.RunOptions{}, "restart", "web", "--city", "SIN")
	if bad.Code != cmdutil.ExitFailure || !strings.Contains(bad.Stderr, "does not run in SIN") {
		t.Errorf("%+v", bad)
	}
}

func TestRolloutHistoryAndUndo(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW", "LHR")
	h.Controllers("web", clitest.Fixed(nil))

	for _, image := range []string{"ghcr.io/acme/web:1.0", "ghcr.io/acme/web:1.1"} {
		res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", image, "--city", "DFW,LHR", "--timeout", "30s")
		if res.Code != cmdutil.ExitOK {
			t.Fatalf("deploy %s: exit %d\n%s", image, res.Code, res.Stderr)
		}
	}
	hist := h.Run(main, clitest.RunOptions{}, "rollout", "history", "web")
	lines := strings.Split(strings.TrimSpace(hist.Stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "2\t*\t") || !strings.Contains(lines[2], "ghcr.io/acme/web:1.1") {
		t.Fatalf("want two revisions, the second current:\n%s", hist.Stdout)
	}

	undo := h.Run(main, clitest.RunOptions{}, "rollout", "undo", "web", "--wait", "--timeout", "30s")
	if undo.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", undo.Code, undo.Stdout, undo.Stderr)
	}
	mustContain(t, "undo", undo.Stdout, "Rolling web back to revision 1:", "~ image: ghcr.io/acme/web:1.1 → ghcr.io/acme/web:1.0",
		"web is rolled out (revision 3)")
	hist = h.Run(main, clitest.RunOptions{}, "rollout", "history", "web", "-o", "json")
	mustContain(t, "history json", hist.Stdout, `"revision": 3`, `"changeCause": "rollout undo --to-revision 1"`)

	same := h.Run(main, clitest.RunOptions{}, "rollout", "undo", "web", "--to-revision", "3")
	mustContain(t, "undo to the current", same.Stdout, "Nothing to do: web already runs the template of revision 3.")
	missing := h.Run(main, clitest.RunOptions{}, "rollout", "undo", "web", "--to-revision", "9")
	if missing.Code != cmdutil.ExitFailure || !strings.Contains(missing.Stderr, "has no revision 9; it has revisions 2, 3") {
		t.Errorf("%+v", missing)
	}
}

func TestRolloutStatusLooksOnceOrWaits(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", clitest.World{"LHR": {clitest.Provisioning}})

	pending := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false")
	if pending.Code != cmdutil.ExitPending {
		t.Errorf("in progress exits 3, got %d", pending.Code)
	}
	mustContain(t, "in progress", pending.Stdout, "web: DFW 2/2 ready · LHR 0/2 starting")

	h.Controllers("web", clitest.Fixed(nil))
	done := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--timeout", "30s")
	if done.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", done.Code, done.Stderr)
	}
	mustContain(t, "done", done.Stdout, "web is rolled out (revision 1): DFW 2/2 ready · LHR 2/2 ready")
}

func TestDestroyAsksFirst(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", nil)
	exists := func() bool {
		var w computev1alpha.Workload
		err := h.Client.Get(context.Background(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w)
		return err == nil && w.DeletionTimestamp == nil
	}

	noTTY := h.Run(main, clitest.RunOptions{}, "destroy", "web")
	if noTTY.Code != cmdutil.ExitUsage || !exists() {
		t.Fatalf("without a terminal destroy needs --yes: %+v", noTTY)
	}
	mustContain(t, "stderr", noTTY.Stderr, "4 instances: DFW 2, LHR 2", "refusing to destroy web without confirmation: pass --yes")

	declined := h.Run(main, clitest.RunOptions{Terminal: true, Stdin: "n\n"}, "destroy", "web")
	if declined.Code != cmdutil.ExitFailure || !exists() {
		t.Fatalf("answering no keeps it: %+v", declined)
	}
	mustContain(t, "stderr", declined.Stderr, "Destroy workload web? [y/N]: ", "not destroyed: web is unchanged")

	yes := h.Run(main, clitest.RunOptions{Terminal: true, Stdin: "y\n"}, "destroy", "web")
	if yes.Code != cmdutil.ExitOK || exists() {
		t.Fatalf("answering yes destroys it: %+v", yes)
	}
	mustContain(t, "stdout", yes.Stdout, "Destroyed workload web; its instances are being removed.")
}

func TestRolloutStatusPrintsADocumentWhateverTheOutcome(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.Converge("web", clitest.World{"LHR": {clitest.Provisioning}})

	res := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false", "-o", "json")
	if res.Code != cmdutil.ExitPending {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var doc struct {
		Kind   string `json:"kind"`
		Done   bool   `json:"done"`
		Cities []struct {
			City, State string
		} `json:"cities"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, res.Stdout)
	}
	if doc.Kind != "RolloutStatus" || doc.Done || len(doc.Cities) != 2 || doc.Cities[1].State != "starting" {
		t.Errorf("%+v", doc)
	}
	mustContain(t, "stderr", res.Stderr, "web: DFW 2/2 ready · LHR 0/2 starting", "still in progress")
}
