//go:build e2e

package compute

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// cliCommandWait bounds one CLI command: rollouts on the simulated
// provider take a few seconds per instance, one after the other.
const cliCommandWait = 4 * time.Minute

// cliUser runs datumctl-compute commands against the project plane in a
// test's namespace, as a user would, logging what each printed.
type cliUser struct {
	t *testing.T
	h *clitest.Harness
}

// newCLIUser returns a user of the project plane in namespace ns.
func newCLIUser(t *testing.T, ns string) *cliUser {
	t.Helper()
	st := local.State()
	rec, err := st.Plane(platform.ProjectPlane(platform.DefaultProject))
	if err != nil {
		t.Fatalf("no project plane: %v", err)
	}
	return &cliUser{t: t, h: clitest.ForKubeconfig(t, rec.Kubeconfig, ns)}
}

// run runs a command and fails the test unless it exits with code.
func (u *cliUser) run(code int, args ...string) clitest.Result {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliCommandWait)
	defer cancel()
	res := u.h.Run(cli.Main, clitest.RunOptions{
		Ctx: ctx,
		Factory: func(f *cmdutil.Factory) {
			// compute-quota activates a requested entitlement; give it time.
			f.ActivationWait = time.Minute
			f.PollInterval = 200 * time.Millisecond
		},
	}, args...)
	stdout := res.Stdout
	if strings.Contains(strings.Join(args, " "), "-o json") {
		stdout = fmt.Sprintf("(%d bytes of JSON)\n", len(stdout))
	}
	u.t.Logf("$ datumctl-compute %s\n(exit %d)\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), res.Code, stdout, res.Stderr)
	if res.Code != code {
		u.t.Fatalf("`%s` exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, code, res.Stdout, res.Stderr)
	}
	return res
}

// instanceView is what `instances -o json` says of one instance.
type instanceView struct {
	uid string
	// templateHash is the template the instance runs (observed by its
	// cell); restartedAt is its restart annotation.
	templateHash, restartedAt string
	// readySince is when it last became Ready.
	readySince time.Time
}

// instances lists the workload's instances through `instances -o json`,
// by city and name.
func (u *cliUser) instances(workload string) map[string]map[string]instanceView {
	u.t.Helper()
	res := u.run(cmdutil.ExitOK, "instances", "--workload", workload, "-o", "json")
	var list computev1alpha.InstanceList
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil {
		u.t.Fatalf("instances -o json is not an InstanceList: %v\n%s", err, res.Stdout)
	}
	out := map[string]map[string]instanceView{}
	for _, inst := range list.Items {
		city := inst.Labels[computev1alpha.CityCodeLabel]
		if out[city] == nil {
			out[city] = map[string]instanceView{}
		}
		v := instanceView{uid: string(inst.UID),
			restartedAt: inst.Annotations[computev1alpha.RestartedAtAnnotation]}
		if inst.Status.Controller != nil {
			v.templateHash = inst.Status.Controller.ObservedTemplateHash
		}
		if c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
			v.readySince = c.LastTransitionTime.Time
		}
		out[city][inst.Name] = v
		u.t.Logf("  %s %s uid=%s template=%s restartedAt=%q ready since %s", city, inst.Name, v.uid, v.templateHash, v.restartedAt, v.readySince.Format(time.RFC3339))
	}
	return out
}

// expectContains fails the test unless s contains every want.
func expectContains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// statusRow returns the line of the status table for city.
func statusRow(out, city string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == city {
			return l
		}
	}
	return ""
}

// historyCurrent returns the line of `rollout history` marked current.
func historyCurrent(out string) string {
	for _, l := range strings.Split(out, "\n") {
		// REVISION, CURRENT ("*" or empty), AGE, ...: an age is never "*".
		if f := strings.Fields(l); len(f) > 1 && f[1] == "*" {
			return l
		}
	}
	return ""
}

func TestCLIUserJourneyDeployScaleRestartRollbackDestroy(t *testing.T) {
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	const (
		image1 = "ghcr.io/citycells/hello:1.0"
		image2 = "ghcr.io/citycells/hello:1.1"
	)

	t.Log("deploy web to DFW and LHR: the CLI waits for the rollout")
	res := u.run(cmdutil.ExitOK, "deploy", "web", "--image", image1, "--city", "DFW,LHR", "--min", "1", "-y", "--timeout", "3m")
	expectContains(t, "deploy stdout", res.Stdout,
		"Create workload web in namespace "+ns.name,
		"web is rolled out (revision 1)",
		"DFW 1/1 ready", "LHR 1/1 ready")

	t.Log("status shows both cities ready at revision 1")
	res = u.run(cmdutil.ExitOK, "status", "web")
	expectContains(t, "status stdout", res.Stdout, "Workload:  web (namespace "+ns.name+")", "Healthy", image1)
	if !strings.Contains(res.Stdout, "Revision:  1\n") {
		t.Errorf("status does not show revision 1:\n%s", res.Stdout)
	}
	for _, city := range []string{"DFW", "LHR"} {
		row := strings.Fields(statusRow(res.Stdout, city))
		// CITY LOCATION PLACEMENT READY UP-TO-DATE STATE
		if len(row) < 6 || row[3] != "1/1" || row[5] != "ready" {
			t.Errorf("status row of %s is %q, want 1/1 ready", city, row)
		}
	}
	if statusRow(res.Stdout, "SIN") != "" {
		t.Errorf("status shows SIN, which web does not run in:\n%s", res.Stdout)
	}

	t.Log("scale to two instances per city and wait")
	res = u.run(cmdutil.ExitOK, "scale", "web", "--min", "2", "--wait", "--timeout", "3m")
	expectContains(t, "scale stdout", res.Stdout, "Scaled web: DFW 2/2 ready · LHR 2/2 ready")
	res = u.run(cmdutil.ExitOK, "status", "web")
	for _, city := range []string{"DFW", "LHR"} {
		row := strings.Fields(statusRow(res.Stdout, city))
		if len(row) < 6 || row[3] != "2/2" || row[5] != "ready" {
			t.Errorf("after scaling, the status row of %s is %q, want 2/2 ready", city, row)
		}
	}
	before := u.instances("web")
	if len(before["DFW"]) != 2 || len(before["LHR"]) != 2 {
		t.Fatalf("after scaling to 2, instances per city are %v", before)
	}

	t.Log("restart DFW only: DFW's instances are replaced, LHR's are left alone")
	// The project plane shows read-only projections of the cells' Instances:
	// the projector updates a projection in place (same name, same UID) when
	// its cell Instance is recreated, so a replacement shows as the new
	// template (the restart annotation) having become Ready after the
	// restart began, not as a new UID.
	restartedAt := time.Now().Add(-time.Second)
	u.run(cmdutil.ExitOK, "restart", "web", "--city", "DFW", "--wait", "--timeout", "3m")
	after := u.instances("web")
	if len(after["DFW"]) != 2 || len(after["LHR"]) != 2 {
		t.Fatalf("after the restart, instances per city are %v", after)
	}
	for name, old := range before["DFW"] {
		now, ok := after["DFW"][name]
		switch {
		case !ok:
			t.Errorf("DFW instance %s is gone after the restart", name)
		case now.restartedAt == "" || now.templateHash == old.templateHash:
			t.Errorf("DFW instance %s was not replaced with the restarted template: before %+v, after %+v", name, old, now)
		case now.readySince.Before(restartedAt.Truncate(time.Second)):
			t.Errorf("DFW instance %s has been Ready since %s, before the restart at %s", name, now.readySince, restartedAt)
		}
	}
	for name, old := range before["LHR"] {
		if now := after["LHR"][name]; now != old {
			t.Errorf("LHR instance %s changed with a restart of DFW: before %+v, after %+v", name, old, now)
		}
	}

	t.Log("roll out a new image, then undo back to the first")
	res = u.run(cmdutil.ExitOK, "deploy", "web", "--image", image2, "-y", "--timeout", "3m")
	expectContains(t, "deploy stdout", res.Stdout, "web is rolled out")
	res = u.run(cmdutil.ExitOK, "rollout", "history", "web")
	expectContains(t, "history stdout", res.Stdout, "REVISION", image1, image2)
	if cur := historyCurrent(res.Stdout); !strings.Contains(cur, image2) {
		t.Errorf("the current revision is %q, want %s:\n%s", cur, image2, res.Stdout)
	}
	res = u.run(cmdutil.ExitOK, "rollout", "undo", "web", "--wait", "--timeout", "3m")
	expectContains(t, "undo stdout", res.Stdout, "Rolling web back to revision 1", "web is rolled out")
	res = u.run(cmdutil.ExitOK, "rollout", "history", "web")
	if cur := historyCurrent(res.Stdout); !strings.Contains(cur, image1) || !strings.Contains(cur, "rollout undo") {
		t.Errorf("after undo, the current revision is %q, want %s:\n%s", cur, image1, res.Stdout)
	}
	res = u.run(cmdutil.ExitOK, "status", "web")
	expectContains(t, "status stdout", res.Stdout, "Healthy", image1)
	if strings.Contains(res.Stdout, image2) {
		t.Errorf("after undo, status still shows %s:\n%s", image2, res.Stdout)
	}

	t.Log("destroy web and wait: nothing is left")
	u.run(cmdutil.ExitOK, "destroy", "web", "--yes", "--wait", "--timeout", "3m")
	res = u.run(cmdutil.ExitOK, "workloads")
	expectContains(t, "workloads stderr", res.Stderr, "No workloads found in namespace "+ns.name)
	if strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("workloads prints %q after destroy", res.Stdout)
	}
}
