package cli_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// TestScaleTurnsAutoscalingOnAndOff: scale --max --cpu autoscales every
// city of the workload, status shows each city's autoscaler, a later
// --memory adds a target and keeps the rest, --no-autoscale removes it.
func TestScaleTurnsAutoscalingOnAndOff(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	h.CreateWorkload(clitest.NewWorkload("web").Build())
	h.WaitRolledOut("web")
	stored := func() computev1alpha.HorizontalScaleSettings {
		t.Helper()
		var w computev1alpha.Workload
		if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, &w); err != nil {
			t.Fatal(err)
		}
		return w.Spec.Placements[0].ScaleSettings
	}

	res := h.Run(main, clitest.RunOptions{}, "scale", "web", "--min", "1", "--max", "4", "--cpu", "50")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Set web (placement default) to autoscale between 1 and 4 instances per city on cpu 50% in DFW, LHR.")
	if s := stored(); !s.Autoscales() || *s.MaxReplicas != 4 || s.MinReplicas != 1 || *s.Metrics[0].Resource.Target.AverageUtilization != 50 {
		t.Errorf("scale settings after --max 4 --cpu 50: %+v", s)
	}
	status := h.Run(main, clitest.RunOptions{}, "status", "web")
	if status.Code != cmdutil.ExitOK {
		t.Fatalf("status: exit %d: %s", status.Code, status.Stderr)
	}
	mustContain(t, "status", status.Stdout, "Autoscaling:\n", "  DFW: autoscaling 1–4", "  LHR: autoscaling 1–4")

	// One city's count is its autoscaler's.
	if res = h.Run(main, clitest.RunOptions{}, "scale", "web", "--city", "DFW", "--min", "3"); res.Code != cmdutil.ExitFailure {
		t.Errorf("scale --city on an autoscaling placement: exit %d, want %d: %s", res.Code, cmdutil.ExitFailure, res.Stderr)
	}
	mustContain(t, "stderr", res.Stderr, "placement default autoscales DFW between 1 and 4 instances", "--no-autoscale")

	res = h.Run(main, clitest.RunOptions{}, "scale", "web", "--memory", "80")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("--memory: exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "between 1 and 4 instances per city on cpu 50% and memory 80% in DFW, LHR.")
	if s := stored(); len(s.Metrics) != 2 || *s.MaxReplicas != 4 {
		t.Errorf("scale settings after --memory 80: %+v", s)
	}

	res = h.Run(main, clitest.RunOptions{}, "scale", "web", "--no-autoscale", "--min", "2")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("--no-autoscale: exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "stdout", res.Stdout, "Set web (placement default) to 2 instances per city, without autoscaling, in DFW, LHR.")
	if s := stored(); s.Autoscales() || s.MaxReplicas != nil || len(s.Metrics) != 0 || s.MinReplicas != 2 {
		t.Errorf("scale settings after --no-autoscale: %+v", s)
	}

	// A ceiling with nothing to scale on is refused before it is sent.
	if res = h.Run(main, clitest.RunOptions{}, "scale", "web", "--max", "4"); res.Code != cmdutil.ExitUsage {
		t.Errorf("--max without a metric: exit %d, want usage: %s", res.Code, res.Stderr)
	}
}
