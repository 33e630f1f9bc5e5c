package cli_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// TestDryRunOnScaleRestartDestroyAndRolloutPauseResume runs every command
// that changes a workload with --dry-run=client and =server: each says what
// it would do, prints the workload as it would be with -o, and stores
// nothing.
func TestDryRunOnScaleRestartDestroyAndRolloutPauseResume(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.BindCities("DFW", "LHR")
	w := wavesWorkload("web")
	w.Spec.Placements = clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR").Build().Spec.Placements
	h.CreateWorkload(w)
	stored := func() *computev1alpha.Workload {
		t.Helper()
		got := &computev1alpha.Workload{}
		if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, got); err != nil {
			t.Fatalf("the workload is gone: %v", err)
		}
		return got
	}
	before := stored()

	for _, tc := range []struct {
		args []string
		// says is on stdout; jsonpath is what -o jsonpath=… prints of the
		// workload as it would be.
		says, jsonpath, want string
	}{
		{[]string{"scale", "web", "--min", "3"}, "Would scale web to 3 instances per city in DFW, LHR.",
			"{.spec.placements[0].scaleSettings.minReplicas}", "3"},
		{[]string{"scale", "web", "--replicas", "4"}, "Would scale web to 4 instances per city in DFW, LHR.",
			"{.spec.placements[0].scaleSettings.minReplicas}", "4"},
		{[]string{"scale", "web", "--min", "1", "--max", "4", "--cpu", "50"},
			"Would set web (placement default) to autoscale between 1 and 4 instances per city on cpu 50% in DFW, LHR.",
			"{.spec.placements[0].scaleSettings.maxReplicas}", "4"},
		{[]string{"restart", "web"}, "Would restart web in DFW, LHR: its instances would be replaced one at a time.",
			"{.metadata.annotations.kubernetes\\.io/change-cause}", "restart"},
		{[]string{"restart", "web", "--city", "DFW"}, "Would restart web in DFW: its instances would be replaced one at a time.",
			"{.metadata.name}", "web"},
		{[]string{"rollout", "pause", "web"}, "Would pause the rollout of web.", "{.spec.rollout.paused}", "true"},
		{[]string{"destroy", "web"}, "Would destroy workload web and its 0 instances.", "{.metadata.name}", "web"},
	} {
		for _, mode := range []string{cmdutil.DryRunClient, cmdutil.DryRunServer} {
			args := append(append([]string(nil), tc.args...), "--dry-run="+mode)
			res := h.Run(main, clitest.RunOptions{}, args...)
			if res.Code != cmdutil.ExitOK {
				t.Errorf("%v: exit %d: %s", args, res.Code, res.Stderr)
				continue
			}
			done := "Dry run: nothing was changed."
			if mode == cmdutil.DryRunServer {
				done = "Server dry run: the server accepted the change; nothing was stored."
			}
			mustContain(t, "stdout of "+args[0], res.Stdout, tc.says, done)

			res = h.Run(main, clitest.RunOptions{}, append(args, "-o", "jsonpath="+tc.jsonpath)...)
			if res.Code != cmdutil.ExitOK || res.Stdout != tc.want {
				t.Errorf("%v -o jsonpath=%s: exit %d, stdout %q, want %q\n%s", args, tc.jsonpath, res.Code, res.Stdout, tc.want, res.Stderr)
			}
			mustContain(t, "stderr of "+args[0], res.Stderr, tc.says, done)
		}
	}
	after := stored()
	if after.Generation != before.Generation || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a dry run changed the workload: generation %d → %d, resourceVersion %s → %s",
			before.Generation, after.Generation, before.ResourceVersion, after.ResourceVersion)
	}

	// A bare --dry-run is client; an unknown mode is a usage error.
	if res := h.Run(main, clitest.RunOptions{}, "rollout", "resume", "web", "--dry-run"); res.Code != cmdutil.ExitOK {
		t.Errorf("rollout resume --dry-run: exit %d: %s", res.Code, res.Stderr)
	} else {
		mustContain(t, "rollout resume", res.Stdout, "Nothing to do: the rollout of web is already running.")
	}
	for _, cmd := range [][]string{{"scale", "web", "--min", "1"}, {"restart", "web"}, {"destroy", "web"}, {"rollout", "pause", "web"}} {
		if res := h.Run(main, clitest.RunOptions{}, append(cmd, "--dry-run=later")...); res.Code != cmdutil.ExitUsage {
			t.Errorf("%v --dry-run=later: exit %d, want a usage error", cmd, res.Code)
		}
	}
	if res := h.Run(main, clitest.RunOptions{}, "scale", "web", "--min", "1", "--replicas", "2"); res.Code != cmdutil.ExitUsage {
		t.Errorf("--min with --replicas: exit %d, want a usage error: %s", res.Code, res.Stderr)
	}
}
