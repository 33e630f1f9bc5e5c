//go:build linux

package platform

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProblemsNameEverythingThatIsNotHealthy(t *testing.T) {
	tests := map[string]struct {
		report StatusReport
		want   []string
	}{
		"a healthy platform has no problems": {
			report: StatusReport{
				Components: []ComponentStatus{{ComponentRecord: ComponentRecord{Name: "etcd"}, Alive: true, Ready: true}},
				Clusters:   []ClusterStatus{{ClusterRecord: ClusterRecord{Name: "cell-dfw", City: "DFW"}, Ready: true}},
			},
		},
		"skipped compute-manager and compute-quota are problems": {
			report: StatusReport{Skipped: []SkippedRecord{
				{Name: "compute-manager-*", Reason: "go build failed"}, {Name: "compute-quota-*", Reason: "no binary"},
			}},
			want: []string{"compute-manager-*: skipped (go build failed)", "compute-quota-*: skipped (no binary)"},
		},
		"components switched off with --managers=off are a choice, not a problem": {
			report: StatusReport{Skipped: []SkippedRecord{
				{Name: "compute-manager-*", Reason: reasonSwitchedOff},
				{Name: "compute-quota-*", Reason: "it serves compute-manager's cells, which do not run: " + reasonSwitchedOff},
			}},
		},
		"a dead, a stopped and an unready component are named": {
			report: StatusReport{Components: []ComponentStatus{
				{ComponentRecord: ComponentRecord{Name: "compute-quota-project-default"}, Detail: "not running; see x.log"},
				{ComponentRecord: ComponentRecord{Name: "karmada-scheduler", Stopped: true}},
				{ComponentRecord: ComponentRecord{Name: "compute-manager-cell-dfw"}, Alive: true, Detail: "GET /readyz: 500"},
			}},
			want: []string{
				"compute-quota-project-default: not running (not running; see x.log)",
				"karmada-scheduler: stopped by compute-local stop (start it with `compute-local start karmada-scheduler`)",
				"compute-manager-cell-dfw: not ready (GET /readyz: 500)",
			},
		},
		"a partitioned city and an unready cluster are named": {
			report: StatusReport{Clusters: []ClusterStatus{
				{ClusterRecord: ClusterRecord{Name: "cell-lhr", City: "LHR"}, Partitioned: true},
				{ClusterRecord: ClusterRecord{Name: "cell-sin", City: "SIN"}, Reason: "ClusterNotReachable", Message: "timeout"},
			}},
			want: []string{
				"LHR: partitioned (heal it with `compute-local heal LHR`)",
				"cell-sin: cluster not Ready (ClusterNotReachable timeout)",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, p := range problems(&tc.report) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAComponentWithoutAHealthEndpointIsNeverReady(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pr, err := newProber(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := ComponentRecord{Name: "kcm", PID: cmd.Process.Pid, Binary: cmd.Args[0]}
	// /proc shows the new command line once the child has exec'd.
	waitUntil(func() bool { return owned(rec) })
	s := componentStatus(context.Background(), pr, rec)
	if !s.Alive || s.Ready || !strings.Contains(s.Detail, "no health endpoint") {
		t.Fatalf("componentStatus() = alive %v, ready %v, %q; want alive, not ready, saying why", s.Alive, s.Ready, s.Detail)
	}
}
