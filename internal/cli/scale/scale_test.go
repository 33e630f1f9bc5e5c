package scale

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestScaleFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args     []string
		wantCode int
	}{
		"a name and --min":          {[]string{"web", "--min", "3"}, cmdutil.ExitOK},
		"zero is allowed":           {[]string{"web", "--min", "0"}, cmdutil.ExitOK},
		"one city":                  {[]string{"web", "--min", "3", "--city", "dfw"}, cmdutil.ExitOK},
		"--min is required":         {[]string{"web"}, cmdutil.ExitUsage},
		"a negative --min is usage": {[]string{"web", "--min", "-1"}, cmdutil.ExitUsage},
		"more than 1000 is usage":   {[]string{"web", "--min", "1001"}, cmdutil.ExitUsage},
		"--min must be a number":    {[]string{"web", "--min", "three"}, cmdutil.ExitUsage},
		"a bad city is usage":       {[]string{"web", "--min", "1", "--city", "Dallas"}, cmdutil.ExitUsage},
		"no name is usage":          {[]string{"--min", "1"}, cmdutil.ExitUsage},
		"--replicas is --min":       {[]string{"web", "--replicas", "3"}, cmdutil.ExitOK},
		"not both":                  {[]string{"web", "--replicas", "3", "--min", "3"}, cmdutil.ExitUsage},
		"--dry-run=server":          {[]string{"web", "--min", "3", "--dry-run=server"}, cmdutil.ExitOK},
		"--dry-run=later is usage":  {[]string{"web", "--min", "3", "--dry-run=later"}, cmdutil.ExitUsage},
		"autoscaling":               {[]string{"web", "--min", "1", "--max", "4", "--cpu", "50"}, cmdutil.ExitOK},
		"autoscaling on memory too": {[]string{"web", "--max", "4", "--cpu", "50", "--memory", "80"}, cmdutil.ExitOK},
		"a target alone":            {[]string{"web", "--cpu", "70"}, cmdutil.ExitOK},
		"--max alone":               {[]string{"web", "--max", "8"}, cmdutil.ExitOK},
		"--max 0 is usage":          {[]string{"web", "--max", "0"}, cmdutil.ExitUsage},
		"--max above 1000 is usage": {[]string{"web", "--max", "1001"}, cmdutil.ExitUsage},
		"--min above --max":         {[]string{"web", "--min", "5", "--max", "4", "--cpu", "50"}, cmdutil.ExitUsage},
		"--cpu 0 is usage":          {[]string{"web", "--max", "4", "--cpu", "0"}, cmdutil.ExitUsage},
		"--memory 1001 is usage":    {[]string{"web", "--max", "4", "--memory", "1001"}, cmdutil.ExitUsage},
		"--no-autoscale":            {[]string{"web", "--no-autoscale"}, cmdutil.ExitOK},
		"--no-autoscale with --min": {[]string{"web", "--no-autoscale", "--min", "2"}, cmdutil.ExitOK},
		"--no-autoscale and --max":  {[]string{"web", "--no-autoscale", "--max", "4"}, cmdutil.ExitUsage},
		"autoscaling one city":      {[]string{"web", "--max", "4", "--cpu", "50", "--city", "DFW"}, cmdutil.ExitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if got := cmdutil.ExitCode(cmdutil.Parse(c, o, tc.args)); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}

func TestScaleEditsTheScaleSettings(t *testing.T) {
	auto := computev1alpha.HorizontalScaleSettings{MinReplicas: 1, MaxReplicas: ptr.To[int32](4), Metrics: []computev1alpha.MetricSpec{
		{Resource: &computev1alpha.ResourceMetricSource{Name: "cpu", Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}}
	withMemory := *auto.DeepCopy()
	withMemory.Metrics[0].Resource.Target.AverageUtilization = ptr.To[int32](70)
	withMemory.Metrics = append(withMemory.Metrics, computev1alpha.MetricSpec{Resource: &computev1alpha.ResourceMetricSource{
		Name: "memory", Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](80)}}})
	for name, tc := range map[string]struct {
		before computev1alpha.HorizontalScaleSettings
		args   []string
		want   computev1alpha.HorizontalScaleSettings
		ops    []string
		fails  bool
	}{
		"autoscaling added": {
			before: computev1alpha.HorizontalScaleSettings{MinReplicas: 2}, args: []string{"--min", "1", "--max", "4", "--cpu", "50"},
			want: auto, ops: []string{"replace minReplicas", "add maxReplicas", "add metrics"},
		},
		"a target changed, another added, the bounds kept": {
			before: auto, args: []string{"--cpu", "70", "--memory", "80"}, want: withMemory, ops: []string{"add metrics"},
		},
		"autoscaling removed": {
			before: auto, args: []string{"--no-autoscale", "--min", "2"}, want: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
			ops: []string{"replace minReplicas", "remove maxReplicas", "remove metrics"},
		},
		"--max without a metric":  {before: computev1alpha.HorizontalScaleSettings{MinReplicas: 1}, args: []string{"--max", "4"}, fails: true},
		"a metric without --max":  {before: computev1alpha.HorizontalScaleSettings{MinReplicas: 1}, args: []string{"--cpu", "50"}, fails: true},
		"--min above the ceiling": {before: auto, args: []string{"--min", "5"}, fails: true},
		"--max below the floor":   {before: computev1alpha.HorizontalScaleSettings{MinReplicas: 3}, args: []string{"--max", "2", "--cpu", "50"}, fails: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, o := newCommand(&cmdutil.Factory{})
			if err := cmdutil.Parse(c, o, append([]string{"web"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			p := computev1alpha.WorkloadPlacement{Name: "default", ScaleSettings: *tc.before.DeepCopy()}
			var patch cmdutil.JSONPatch
			err := o.edit(&p, &patch, "/spec/placements/0/scaleSettings")
			if tc.fails {
				if err == nil {
					t.Fatalf("edit accepted %+v", p.ScaleSettings)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.ScaleSettings); diff != "" {
				t.Errorf("scale settings (-want +got):\n%s", diff)
			}
			var ops []string
			for _, op := range patch {
				ops = append(ops, fmt.Sprintf("%s %s", op["op"], strings.TrimPrefix(op["path"].(string), "/spec/placements/0/scaleSettings/")))
			}
			if diff := cmp.Diff(tc.ops, ops); diff != "" {
				t.Errorf("patch operations (-want +got):\n%s", diff)
			}
		})
	}
}
