package statusview

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/test/clitest"
)

// cmd renders command lines as datumctl does.
func cmd(format string, args ...any) string {
	return "datumctl compute " + fmt.Sprintf(format, args...)
}

// (A printer test: it renders objects built in memory, in the states the
// controllers write; no controller runs. The command tests in
// internal/cli run on the live plane, with the real controllers.)
// snapshot returns workload web converged in world.
func snapshot(world clitest.World) view.Snapshot {
	w := clitest.NewWorkload("web").Placement("default", 2, "DFW", "LHR", "SIN").Build()
	w.Status.CurrentRevision = 3
	clitest.InMemory(w, world)
	return view.Snapshot{Workload: w, Now: clitest.Epoch}
}

func TestStatusView(t *testing.T) {
	for name, world := range map[string]clitest.World{
		"healthy":  nil,
		"degraded": {"LHR": {clitest.Available, clitest.QuotaExceeded}, "SIN": {clitest.ImageUnavailable}},
		"starting": {"SIN": {clitest.Available, clitest.Provisioning}},
	} {
		v := Build(snapshot(world), cmd)
		for _, out := range []struct {
			suffix   string
			terminal bool
		}{{"terminal", true}, {"pipe", false}} {
			t.Run(name+"/"+out.suffix, func(t *testing.T) {
				var b strings.Builder
				if err := v.Render(&b, out.terminal, 100); err != nil {
					t.Fatal(err)
				}
				clitest.Golden(t, "status-"+name+"-"+out.suffix, b.String())
			})
		}
		t.Run(name+"/json", func(t *testing.T) {
			var b strings.Builder
			if err := cmdutil.PrintView(&b, cmdutil.OutputJSON, v); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, "status-"+name+"-json", b.String())
		})
	}
}

func TestStatusFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"a name is all it needs":            {[]string{"web"}, cmdutil.ExitOK},
		"without a name it is usage":        {nil, cmdutil.ExitUsage},
		"two names are usage":               {[]string{"web", "api"}, cmdutil.ExitUsage},
		"watch is accepted":                 {[]string{"web", "--watch"}, cmdutil.ExitOK},
		"watch with json is usage":          {[]string{"web", "-w", "-o", "json"}, cmdutil.ExitUsage},
		"a watch needs a positive deadline": {[]string{"web", "-w", "--timeout", "0s"}, cmdutil.ExitUsage},
		"a malformed deadline is usage":     {[]string{"web", "--timeout", "soon"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}

func TestStatusShowsARetiringInstanceType(t *testing.T) {
	s := snapshot(nil)
	const msg = "InstanceType 'datumcloud-d1-standard-8' is deprecated; please migrate to 'datumcloud-d1-standard-16'."
	meta.SetStatusCondition(&s.Workload.Status.Conditions, metav1.Condition{
		Type: computev1alpha.InstanceTypeConditionDeprecated, Status: metav1.ConditionTrue,
		Reason: computev1alpha.InstanceTypeConditionDeprecated, Message: msg,
	})
	v := Build(s, cmd)
	var b strings.Builder
	if err := v.Render(&b, false, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nType:      "+msg+"\n") {
		t.Errorf("the status does not name the replacement:\n%s", b.String())
	}
	var js strings.Builder
	if err := cmdutil.PrintView(&js, cmdutil.OutputJSON, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"instanceType": {`) || !strings.Contains(js.String(), "please migrate to 'datumcloud-d1-standard-16'") {
		t.Errorf("-o json lacks the instance type condition:\n%s", js.String())
	}
}

// autoscaled is web autoscaling 1–4 at 50 % cpu in its three cities:
// DFW at 3 replicas and 72 %, LHR scaling from 1 to 2, SIN in a cell
// without metrics (the placement's AutoscalingReady False, with the
// registry's next step).
func autoscaled() view.Snapshot {
	s := snapshot(nil)
	w := s.Workload
	w.Spec.Placements[0].ScaleSettings = computev1alpha.HorizontalScaleSettings{MinReplicas: 1, MaxReplicas: ptr.To[int32](4),
		Metrics: []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{Name: "cpu",
			Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}}
	cpu := func(current *int32) []computev1alpha.AutoscalingMetricStatus {
		return []computev1alpha.AutoscalingMetricStatus{{Name: "cpu", Target: w.Spec.Placements[0].ScaleSettings.Metrics[0].Resource.Target,
			CurrentAverageUtilization: current}}
	}
	reports := map[string]*computev1alpha.AutoscalingStatus{
		"DFW": {MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 3, CurrentReplicas: 3, Metrics: cpu(ptr.To[int32](72))},
		"LHR": {MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 2, CurrentReplicas: 1, Metrics: cpu(ptr.To[int32](95))},
		"SIN": {MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 1, CurrentReplicas: 1, Metrics: cpu(nil)},
	}
	ps := &w.Status.Placements[0]
	for i := range ps.Cities {
		ps.Cities[i].Autoscaling = reports[ps.Cities[i].CityCode]
	}
	ps.Conditions = append(ps.Conditions,
		metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonMetricsUnavailable,
			Message: "SIN: the SIN cell serves no resource metrics; the deployment is held at minReplicas"},
		metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonWithinScalingLimits,
			Message: "within minReplicas and maxReplicas in DFW, LHR, SIN"})
	return s
}

func TestStatusShowsEachCitysAutoscaler(t *testing.T) {
	v := Build(autoscaled(), cmd)
	var b strings.Builder
	if err := v.Render(&b, false, 0); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "status-autoscaling-pipe", b.String())
	var js strings.Builder
	if err := cmdutil.PrintView(&js, cmdutil.OutputJSON, v); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "status-autoscaling-json", js.String())
}
