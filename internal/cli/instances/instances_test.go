package instances

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// fixture is the instances of a workload with one healthy city and one
// city in every state a user meets.
func fixture() []computev1alpha.Instance {
	w := clitest.NewWorkload("web").Placement("default", 6, "DFW", "LHR").Build()
	_, insts := clitest.InMemory(w, clitest.World{"LHR": {clitest.Available, clitest.Provisioning, clitest.PendingQuota,
		clitest.QuotaExceeded, clitest.ImageUnavailable, clitest.Crashing}})
	dfw := clitest.NewWorkload("api").Placement("default", 1, "DFW").Build()
	_, more := clitest.InMemory(dfw, clitest.World{"DFW": {clitest.ConfigError}})
	insts = append(insts[4:], more...)
	SortInstances(insts)
	return insts
}

func TestInstancesTable(t *testing.T) {
	for name, terminal := range map[string]bool{"terminal": true, "pipe": false} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := Table(fixture(), clitest.Epoch, TableOptions{}).Render(&b, terminal, 0); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "instances-"+name, b.String())
		})
	}
}

func TestInstancesSummaryCountsByStatus(t *testing.T) {
	if got, want := Summary(fixture()), "9 instances: 3 available, 1 starting, 2 pending, 3 failed"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInstancesJSON(t *testing.T) {
	var b strings.Builder
	list := &computev1alpha.InstanceList{Items: fixture()[:1]}
	if err := cmdutil.PrintObject(&b, cmdutil.OutputJSON, list, cmdutil.NewScheme()); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "instances-json", b.String())
}

func TestDescribe(t *testing.T) {
	insts := fixture()
	events := []corev1.Event{{
		ObjectMeta:    metav1.ObjectMeta{Name: "e1", CreationTimestamp: metav1.NewTime(clitest.Epoch.Add(-10e9))},
		LastTimestamp: metav1.NewTime(clitest.Epoch.Add(-10e9)),
		Type:          corev1.EventTypeWarning, Reason: "ImageUnavailable",
		Message: `failed to pull image "ghcr.io/acme/web:bad": manifest unknown`,
	}}
	for name, tc := range map[string]struct {
		inst   *computev1alpha.Instance
		events []corev1.Event
	}{
		"available":         {&insts[0], nil},
		"image-unavailable": {find(t, insts, "Failed (image unavailable)"), events},
		"quota-exceeded":    {find(t, insts, "Pending (quota exceeded)"), nil},
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			cmd := func(format string, args ...any) string { return "datumctl compute " + fmt.Sprintf(format, args...) }
			if err := Describe(tc.inst, tc.events, clitest.Epoch, cmd, true).Render(&b, true, 120); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "describe-"+name, b.String())
		})
	}
}

// find returns the instance whose status reads status.
func find(t *testing.T, insts []computev1alpha.Instance, status string) *computev1alpha.Instance {
	t.Helper()
	var b strings.Builder
	_ = Table(insts, clitest.Epoch, TableOptions{}).Render(&b, false, 0)
	for i, line := range strings.Split(b.String(), "\n")[1:] {
		if strings.HasSuffix(line, "   "+status) {
			return &insts[i]
		}
	}
	t.Fatalf("no instance is %q", status)
	return nil
}

func TestInstancesFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
		wantCity string
	}{
		"no flags list everything":                {nil, cmdutil.ExitOK, ""},
		"a city is upper-cased":                   {[]string{"--city", "dfw"}, cmdutil.ExitOK, "DFW"},
		"a city that is not a city code is usage": {[]string{"--city", "Dallas"}, cmdutil.ExitUsage, ""},
		"a workload filter is accepted":           {[]string{"--workload", "web"}, cmdutil.ExitOK, ""},
		"yaml output is accepted":                 {[]string{"-o", "yaml"}, cmdutil.ExitOK, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, o := newListCommand(&cmdutil.Factory{}, "instances")
			if got := cmdutil.ExitCode(cmdutil.Parse(cmd, o, tc.args)); got != tc.wantCode {
				t.Fatalf("exit code %d, want %d", got, tc.wantCode)
			}
			if tc.wantCode == cmdutil.ExitOK && o.City != tc.wantCity {
				t.Errorf("city = %q, want %q", o.City, tc.wantCity)
			}
		})
	}
	t.Run("describe needs a name", func(t *testing.T) {
		cmd, o := newDescribeCommand(&cmdutil.Factory{})
		if got := cmdutil.ExitCode(cmdutil.Parse(cmd, o, nil)); got != cmdutil.ExitUsage {
			t.Errorf("exit code %d", got)
		}
	})
}

func TestInstancesWideTableAddsPlacementQuotaAndAddresses(t *testing.T) {
	var b strings.Builder
	if err := Table(fixture(), clitest.Epoch, TableOptions{Wide: true, AllNamespaces: true}).Render(&b, true, 0); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "instances-wide", b.String())
}
