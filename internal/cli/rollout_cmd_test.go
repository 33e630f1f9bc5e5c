package cli_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// wavesWorkload is web rolled DFW first, then LHR.
func wavesWorkload(name string) *computev1alpha.Workload {
	w := clitest.NewWorkload(name).Build()
	w.Spec.Rollout = &computev1alpha.WorkloadRollout{
		Strategy: computev1alpha.WavesCityRollout,
		Waves:    []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR"}}},
		Approval: computev1alpha.ManualRolloutApproval,
	}
	return w
}

// setRollout writes status.rollout as the management plane would, for the
// workload's current revision.
func setRollout(t *testing.T, h *clitest.Harness, name string, phase computev1alpha.RolloutPhase, wave int32, dfw, lhr computev1alpha.CityRolloutState) {
	t.Helper()
	w := &computev1alpha.Workload{}
	if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	w.Status.Rollout = &computev1alpha.WorkloadRolloutStatus{
		Revision: w.Status.CurrentRevision, TemplateHash: w.Status.CurrentTemplateHash, Strategy: computev1alpha.WavesCityRollout,
		Phase: phase, Wave: wave, Waves: 2, Message: "wave 2 of 2 waits for approval; run `rollout approve`",
		Cities: []computev1alpha.CityRolloutStatus{
			{Placement: "default", CityCode: "DFW", Wave: 1, Revision: w.Status.CurrentRevision, State: dfw},
			{Placement: "default", CityCode: "LHR", Wave: 2, Revision: w.Status.CurrentRevision, State: lhr},
		},
	}
	if phase == computev1alpha.RolloutPhaseHalted {
		w.Status.Rollout.Message = "halted in default/DFW: ProgressDeadlineExceeded: not ready 10m0s after it got the new revision"
		w.Status.Rollout.Cities[0].Reason = computev1alpha.ReasonProgressDeadlineExceeded
	}
	if err := h.Client.Status().Update(h.Ctx(), w); err != nil {
		t.Fatal(err)
	}
}

func TestRolloutPauseResumeAndApprove(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(wavesWorkload("web"))
	h.Converge("web", clitest.World{})

	// approve refuses while nothing waits for approval.
	early := h.Run(main, clitest.RunOptions{}, "rollout", "approve", "web")
	if early.Code != cmdutil.ExitFailure {
		t.Fatalf("approve with nothing waiting: exit %d: %s", early.Code, early.Stderr)
	}
	mustContain(t, "stderr", early.Stderr, "is not waiting for approval", "→ See where it stands with: datumctl compute rollout status web --watch=false")

	// The second wave waits: status says so and approve lets it start.
	setRollout(t, h, "web", computev1alpha.RolloutPhaseAwaitingApproval, 2, computev1alpha.CityUpdated, computev1alpha.CityWaiting)
	st := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false")
	if st.Code != cmdutil.ExitPending {
		t.Fatalf("status while awaiting approval: exit %d: %s %s", st.Code, st.Stdout, st.Stderr)
	}
	mustContain(t, "status", st.Stdout, "wave 2/2 AwaitingApproval", "LHR 2/2 waiting for its wave")

	res := h.Run(main, clitest.RunOptions{}, "rollout", "approve", "web")
	if res.Code != cmdutil.ExitOK {
		t.Fatalf("approve: exit %d: %s", res.Code, res.Stderr)
	}
	mustContain(t, "approve", res.Stdout, "Approved wave 2 of 2 of web")
	w := &computev1alpha.Workload{}
	if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, w); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Annotations[computev1alpha.RolloutApprovedAnnotation], w.Status.CurrentTemplateHash+":2"; got != want {
		t.Errorf("approval annotation %q, want %q", got, want)
	}

	// pause and resume flip spec.rollout.paused; a second pause is a no-op.
	for _, step := range []struct {
		verb   string
		paused bool
		say    string
	}{
		{"pause", true, "Paused the rollout of web"},
		{"pause", true, "Nothing to do: the rollout of web is already paused."},
		{"resume", false, "Resumed the rollout of web"},
	} {
		res := h.Run(main, clitest.RunOptions{}, "rollout", step.verb, "web")
		if res.Code != cmdutil.ExitOK {
			t.Fatalf("%s: exit %d: %s", step.verb, res.Code, res.Stderr)
		}
		mustContain(t, step.verb, res.Stdout, step.say)
		if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: "web"}, w); err != nil {
			t.Fatal(err)
		}
		if w.Spec.Rollout.Paused != step.paused {
			t.Errorf("after %s: paused = %v", step.verb, w.Spec.Rollout.Paused)
		}
	}

	// A workload without spec.rollout has nothing to pause, and says how to get waves.
	h.CreateWorkload(clitest.NewWorkload("plain").Build())
	plain := h.Run(main, clitest.RunOptions{}, "rollout", "pause", "plain")
	if plain.Code != cmdutil.ExitFailure {
		t.Fatalf("pause without spec.rollout: exit %d", plain.Code)
	}
	mustContain(t, "stderr", plain.Stderr, "has no rollout strategy", "→ Roll cities in waves by setting spec.rollout")
}

func TestRolloutStatusExitsWithFailureWhenTheRolloutHalted(t *testing.T) {
	t.Parallel()
	h := harness(t)
	h.CreateWorkload(wavesWorkload("web"))
	h.Converge("web", clitest.World{})
	setRollout(t, h, "web", computev1alpha.RolloutPhaseHalted, 1, computev1alpha.CityHalted, computev1alpha.CityWaiting)

	for _, args := range [][]string{{"--watch=false"}, {"--timeout", "30s"}} {
		res := h.Run(main, clitest.RunOptions{}, append([]string{"rollout", "status", "web"}, args...)...)
		if res.Code != cmdutil.ExitFailure {
			t.Fatalf("rollout status %v on a halted rollout: exit %d (want %d, failure, not %d, timeout): %s %s",
				args, res.Code, cmdutil.ExitFailure, cmdutil.ExitPending, res.Stdout, res.Stderr)
		}
		mustContain(t, "stderr", res.Stderr, "Rollout halted", "halted in default/DFW: ProgressDeadlineExceeded",
			"→ Fix the template and deploy again (the rollout restarts at wave 1)")
	}
}
