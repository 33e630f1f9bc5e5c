package cli_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
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

// deployImage changes the image of workload name, with annotations (the
// simulated provider's) on the new template, and returns the workload as
// updated.
func deployImage(t *testing.T, h *clilive.Harness, name, image string, annotations map[string]string) *computev1alpha.Workload {
	t.Helper()
	w := &computev1alpha.Workload{}
	if err := h.Client.Get(h.Ctx(), client.ObjectKey{Namespace: h.Namespace, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(w.DeepCopy())
	w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = image
	w.Spec.Template.Metadata.Annotations = annotations
	if err := h.Client.Patch(h.Ctx(), w, patch); err != nil {
		t.Fatal(err)
	}
	return w
}

// rolloutPhase waits until the controllers report the rollout of workload
// name in phase, and returns the workload.
func rolloutPhase(h *clilive.Harness, name string, phase computev1alpha.RolloutPhase) *computev1alpha.Workload {
	h.T.Helper()
	w := &computev1alpha.Workload{}
	h.Eventually(fmt.Sprintf("the rollout of %s is %s", name, phase), func(ctx context.Context) error {
		if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: name}, w); err != nil {
			return err
		}
		if ro := w.Status.Rollout; w.Status.ObservedGeneration != w.Generation || ro == nil || ro.Phase != phase {
			return fmt.Errorf("status.rollout %+v", ro)
		}
		return nil
	})
	return w
}

func TestRolloutPauseResumeAndApprove(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	// A first deployment reaches every city at once; waves start with the
	// second revision.
	h.CreateWorkload(wavesWorkload("web"))
	h.WaitRolledOut("web")

	// approve refuses while nothing waits for approval.
	early := h.Run(main, clitest.RunOptions{}, "rollout", "approve", "web")
	if early.Code != cmdutil.ExitFailure {
		t.Fatalf("approve with nothing waiting: exit %d: %s", early.Code, early.Stderr)
	}
	mustContain(t, "stderr", early.Stderr, "is not waiting for approval", "→ See where it stands with: datumctl compute rollout status web --watch=false")

	// A new image rolls DFW, then the second wave waits: status says so
	// and approve lets it start.
	deployImage(t, h, "web", "ghcr.io/acme/web:1.1", nil)
	rolloutPhase(h, "web", computev1alpha.RolloutPhaseAwaitingApproval)
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
	done := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--timeout", "50s")
	if done.Code != cmdutil.ExitOK {
		t.Fatalf("the approved wave never finished: exit %d:\n%s%s", done.Code, done.Stdout, done.Stderr)
	}
	mustContain(t, "rollout status", done.Stdout, "web is rolled out (revision 2)")

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
	h := live(t, clilive.Plenty)
	w := wavesWorkload("web")
	w.Spec.Rollout.ProgressDeadlineSeconds = ptr.To(int32(2))
	h.CreateWorkload(w)
	h.WaitRolledOut("web")
	// The new revision's instances never finish starting (the provider
	// holds them): DFW, the first wave, passes its progress deadline and
	// halts the rollout.
	deployImage(t, h, "web", "ghcr.io/acme/web:1.1", clilive.HeldAnnotations())
	rolloutPhase(h, "web", computev1alpha.RolloutPhaseHalted)

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

func TestRolloutHaltsWhenTheNewImageFailsWhileOldInstancesServe(t *testing.T) {
	t.Parallel()
	h := live(t, clilive.Plenty)
	w := wavesWorkload("web") // 2 instances per city, OrderedReady
	w.Spec.Rollout.ProgressDeadlineSeconds = ptr.To(int32(600))
	h.CreateWorkload(w)
	h.WaitRolledOut("web")
	// DFW replaces web-1 first; the provider cannot pull the new image
	// while web-0 still serves 1.0. The halt comes from the failure, long
	// before the 10-minute progress deadline.
	deployImage(t, h, "web", "ghcr.io/acme/web:broken", clilive.FailingAnnotations(computev1alpha.ReasonImageUnavailable))
	rolloutPhase(h, "web", computev1alpha.RolloutPhaseHalted)

	res := h.Run(main, clitest.RunOptions{}, "rollout", "status", "web", "--watch=false")
	if res.Code != cmdutil.ExitFailure {
		t.Fatalf("rollout status on a halted rollout: exit %d: %s %s", res.Code, res.Stdout, res.Stderr)
	}
	mustContain(t, "stderr", res.Stderr, "Rollout halted", "halted in default/DFW: ImageUnavailable")
}
