package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/restart"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

func TestStatusWatchEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")
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
	h := live(t, clilive.Plenty)
	// Every instance the controllers create is held until released: the
	// test decides when a scale-up completes.
	h.CreateWorkload(clitest.NewWorkload("web").Edit(clilive.Held).Build())
	h.Release("web")
	ctx := context.Background()

	res := h.Run(main, clitest.RunOptions{}, "scale", "web", "--city", "LHR", "--min", "5")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Scaled web in LHR to 5 instances.")
	h.Release("web", "LHR")
	status := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--timeout", "50s")
	if status.Code != cmdutil.ExitOK {
		t.Fatalf("rollout status: exit %d:\n%s%s", status.Code, status.Stdout, status.Stderr)
	}
	mustContain(t, "rollout status", status.Stdout, "DFW 2/2 ready · LHR 5/5 ready")

	// DFW's third instance is held: the wait times out.
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
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")
	ctx := context.Background()

	res := h.Run(main, clitest.RunOptions{}, "restart", "web", "--city", "DFW", "--wait", "--timeout", "50s")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Restarting web in DFW", "Restarted web: DFW 2/2 ready · LHR 2/2 ready")

	// restartedAt returns each city's restart mark, once every city's
	// deployment satisfies ok.
	restartedAt := func(what string, ok func(wd *computev1alpha.WorkloadDeployment) bool) map[string]string {
		t.Helper()
		out := map[string]string{}
		h.Eventually(what, func(ctx context.Context) error {
			var wds computev1alpha.WorkloadDeploymentList
			if err := h.Client.List(ctx, &wds, client.InNamespace(h.Namespace)); err != nil {
				return err
			}
			clear(out)
			for i := range wds.Items {
				wd := &wds.Items[i]
				if !ok(wd) {
					return fmt.Errorf("%s: template annotations %v", wd.Spec.CityCode, wd.Spec.Template.Metadata.Annotations)
				}
				out[wd.Spec.CityCode] = wd.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
			}
			return nil
		})
		return out
	}
	anyCity := func(*computev1alpha.WorkloadDeployment) bool { return true }
	var w computev1alpha.Workload
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
		t.Fatal(err)
	}
	cityAt := w.Annotations[restart.CityRestartedAtAnnotation("DFW")]
	if cityAt == "" || w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] != "" {
		t.Fatalf("a city restart marks the workload, not its template: %v / %v", w.Annotations, w.Spec.Template.Metadata.Annotations)
	}
	if got := restartedAt("the deployments", anyCity); got["DFW"] != cityAt || got["LHR"] != "" {
		t.Errorf("only DFW restarts: %v", got)
	}

	// A later change of the workload must keep DFW's restart.
	if res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--env", "MODE=1", "--detach"); res.Code != cmdutil.ExitOK {
		t.Fatalf("deploy: exit %d: %s", res.Code, res.Stderr)
	}
	withMode := func(wd *computev1alpha.WorkloadDeployment) bool {
		env := wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Env
		return len(env) == 1 && env[0].Name == "MODE"
	}
	if got := restartedAt("every city gets MODE=1", withMode); got["DFW"] != cityAt {
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
	restartedAt("every city restarts at "+tplAt, func(wd *computev1alpha.WorkloadDeployment) bool {
		return wd.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] == tplAt
	})

	bad := h.Run(main, clitest.RunOptions{}, "restart", "web", "--city", "SIN")
	if bad.Code != cmdutil.ExitFailure || !strings.Contains(bad.Stderr, "does not run in SIN") {
		t.Errorf("%+v", bad)
	}
}

func TestRolloutHistoryAndUndo(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)

	for _, image := range []string{"ghcr.io/acme/web:1.0", "ghcr.io/acme/web:1.1"} {
		res := h.Run(main, clitest.RunOptions{}, "deploy", "web", "--image", image, "--city", "DFW,LHR", "--timeout", "50s")
		if res.Code != cmdutil.ExitOK {
			t.Fatalf("deploy %s: exit %d\n%s", image, res.Code, res.Stderr)
		}
	}
	hist := h.Run(main, clitest.RunOptions{}, "rollout", "history", "web")
	lines := strings.Split(strings.TrimSpace(cells(hist.Stdout)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "2\t*\t") || !strings.Contains(lines[2], "ghcr.io/acme/web:1.1") {
		t.Fatalf("want two revisions, the second current:\n%s", hist.Stdout)
	}

	undo := h.Run(main, clitest.RunOptions{}, "rollout", "undo", "web", "--wait", "--timeout", "50s")
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

// startedInLHR creates web (2 instances in DFW and LHR) with every instance
// held, lets DFW start, and waits until the controllers report DFW ready
// and LHR starting.
func startedInLHR(t *testing.T, h *clilive.Harness) {
	t.Helper()
	h.CreateWorkload(clitest.NewWorkload("web").Edit(clilive.Held).Build())
	h.Release("web", "DFW")
	h.Eventually("the workload reports DFW ready", func(ctx context.Context) error {
		var w computev1alpha.Workload
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
			return err
		}
		if w.Status.ObservedGeneration != w.Generation || w.Status.DesiredReplicas != 4 || w.Status.ReadyReplicas != 2 {
			return fmt.Errorf("status %+v", w.Status.ReplicaCounts)
		}
		return nil
	})
}

func TestRolloutStatusLooksOnceOrWaits(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	startedInLHR(t, h)

	pending := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false")
	if pending.Code != cmdutil.ExitPending {
		t.Errorf("in progress exits 3, got %d", pending.Code)
	}
	mustContain(t, "in progress", pending.Stdout, "web: DFW 2/2 ready · LHR 0/2 starting")

	cmd := start(h, clitest.RunOptions{}, "rollout", "status", "web", "--timeout", "50s")
	h.Release("web", "LHR")
	if code := cmd.exit(t); code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s%s", code, cmd.out, cmd.errOut)
	}
	mustContain(t, "done", cmd.out.String(), "web is rolled out (revision 1): DFW 2/2 ready · LHR 2/2 ready")
}

func TestDestroyAsksFirst(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")
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

func TestDestroyWaitsUntilTheInstancesAreGone(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")

	// The garbage collector removes the deployments and instances; the
	// provider tears each instance down (ProviderDelay) before it goes.
	res := h.Run(main, clitest.RunOptions{}, "destroy", "web", "--yes", "--wait", "--timeout", "50s")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Destroying web: 4 instances left", "Destroyed workload web and its instances.")
	var insts computev1alpha.InstanceList
	if err := h.Client.List(context.Background(), &insts, client.InNamespace(h.Namespace)); err != nil || len(insts.Items) != 0 {
		t.Errorf("instances left after the wait: %d (%v)", len(insts.Items), err)
	}
}

func TestRolloutStatusPrintsADocumentWhateverTheOutcome(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	startedInLHR(t, h)

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
