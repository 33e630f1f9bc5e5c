package rollout

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/test/clitest"
)

// history records three templates of web the way the management plane
// does and returns the workload and its revisions.
func history(t *testing.T) (*computev1alpha.Workload, []*appsv1.ControllerRevision) {
	t.Helper()
	w := clitest.NewWorkload("web").Build()
	w.UID = "uid-web"
	var existing []appsv1.ControllerRevision
	for i, step := range []struct {
		image, cause, by string
	}{
		{"ghcr.io/acme/web:1.0", "deploy web --image=ghcr.io/acme/web:1.0 --city=DFW,LHR", "alice@example.com"},
		{"ghcr.io/acme/web:1.1", "deploy web --image=ghcr.io/acme/web:1.1", "bob@example.com"},
		{"ghcr.io/acme/web:1.2", "", ""},
	} {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = step.image
		w.Annotations = map[string]string{}
		if step.cause != "" {
			w.Annotations[revision.ChangeCauseAnnotation] = step.cause
		}
		if step.by != "" {
			w.Annotations[revision.ChangedByAnnotation] = step.by
		}
		plan, err := revision.Compute(w, existing, clitest.Epoch.Add(time.Duration(i-3)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		existing = append(existing, *plan.Create)
		w.Status.CurrentRevision = plan.Current.Number
	}
	revs := make([]*appsv1.ControllerRevision, 0, len(existing))
	for i := range existing {
		revs = append(revs, &existing[i])
	}
	return w, revs
}

func TestHistoryTable(t *testing.T) {
	w, revs := history(t)
	h, err := BuildHistory(w, revs)
	if err != nil {
		t.Fatal(err)
	}
	for name, terminal := range map[string]bool{"terminal": true, "pipe": false} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := HistoryTable(h, clitest.Epoch, terminal).Render(&b, terminal, 0); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "history-"+name, b.String())
		})
	}
	t.Run("json", func(t *testing.T) {
		for i := range h.Revisions {
			h.Revisions[i].Template = nil
		}
		var b strings.Builder
		if err := cmdutil.PrintView(&b, cmdutil.OutputJSON, h); err != nil {
			t.Fatal(err)
		}
		clitest.Golden(t, "history-json", b.String())
	})
}

func TestOneRevisionShowsItsTemplate(t *testing.T) {
	w, revs := history(t)
	h, err := BuildHistory(w, revs)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := RenderRevision(&b, h.Find(2), clitest.Epoch); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "history-revision-2", b.String())
}

func TestUndoPicksThePreviousRevisionOrTheOneAskedFor(t *testing.T) {
	w, revs := history(t)
	h, err := BuildHistory(w, revs)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		to       int64
		want     int64
		wantCode int
	}{
		"by default the one before the current": {0, 2, cmdutil.ExitOK},
		"the revision asked for":                {1, 1, cmdutil.ExitOK},
		"a revision that does not exist fails":  {7, 0, cmdutil.ExitFailure},
	} {
		t.Run(name, func(t *testing.T) {
			o := &UndoOptions{ChangeOptions: cmdutil.ChangeOptions{WorkloadWaitOptions: cmdutil.WorkloadWaitOptions{WorkloadRef: cmdutil.NewWorkloadRef(&cmdutil.Factory{})}}, ToRevision: tc.to}
			o.Name = "web"
			r, err := o.target(h)
			if got := cmdutil.ExitCode(err); got != tc.wantCode {
				t.Fatalf("exit code %d (%v), want %d", got, err, tc.wantCode)
			}
			if err == nil && r.Number != tc.want {
				t.Errorf("revision %d, want %d", r.Number, tc.want)
			}
		})
	}
	t.Run("the first revision has nothing before it", func(t *testing.T) {
		first, err := BuildHistory(w, revs[:1])
		if err != nil {
			t.Fatal(err)
		}
		first.Current = 1
		o := &UndoOptions{ChangeOptions: cmdutil.ChangeOptions{WorkloadWaitOptions: cmdutil.WorkloadWaitOptions{WorkloadRef: cmdutil.NewWorkloadRef(&cmdutil.Factory{})}}}
		o.Name = "web"
		if _, err := o.target(first); err == nil || !strings.Contains(err.Error(), "no earlier revision") {
			t.Errorf("got %v", err)
		}
	})
}

func TestRolloutFlags(t *testing.T) {
	f := &cmdutil.Factory{}
	for name, tc := range map[string]struct {
		cmd      string
		args     []string
		wantCode int
	}{
		"status needs a name":                  {"status", nil, cmdutil.ExitUsage},
		"status takes a timeout":               {"status", []string{"web", "--timeout", "2m"}, cmdutil.ExitOK},
		"status can look once":                 {"status", []string{"web", "--watch=false"}, cmdutil.ExitOK},
		"status refuses a zero timeout":        {"status", []string{"web", "--timeout", "0s"}, cmdutil.ExitUsage},
		"history takes a revision":             {"history", []string{"web", "--revision", "2"}, cmdutil.ExitOK},
		"history refuses a negative revision":  {"history", []string{"web", "--revision", "-1"}, cmdutil.ExitUsage},
		"undo takes a revision":                {"undo", []string{"web", "--to-revision", "2"}, cmdutil.ExitOK},
		"undo refuses a revision that is text": {"undo", []string{"web", "--to-revision", "two"}, cmdutil.ExitUsage},
		"undo can wait":                        {"undo", []string{"web", "--wait", "--timeout", "1m"}, cmdutil.ExitOK},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			switch tc.cmd {
			case "status":
				c, o := newStatusCommand(f)
				err = cmdutil.Parse(c, o, tc.args)
			case "history":
				c, o := newHistoryCommand(f)
				err = cmdutil.Parse(c, o, tc.args)
			case "undo":
				c, o := newUndoCommand(f)
				err = cmdutil.Parse(c, o, tc.args)
			}
			if got := cmdutil.ExitCode(err); got != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d", got, err, tc.wantCode)
			}
		})
	}
}
