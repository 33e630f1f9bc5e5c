package metricsdoc

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/citycells/compute/internal/buildinfo"
	"github.com/citycells/compute/internal/controller/cellhealth"
	"github.com/citycells/compute/internal/controller/instance"
	"github.com/citycells/compute/internal/controller/podevents"
	"github.com/citycells/compute/internal/controller/projector"
	"github.com/citycells/compute/internal/controller/workload"
	"github.com/citycells/compute/internal/controller/workloaddeployment"
	"github.com/citycells/compute/internal/controller/writeback"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/standin/quotaservice"
)

func TestParse(t *testing.T) {
	doc := `# Metrics
| Series | Type | Labels | Exported by | Present |
|---|---|---|---|---|
| ` + "`compute_a`" + ` | gauge | ` + "`x`, `y`" + ` | all | always |
| ` + "`compute_b_total`" + ` | counter | | cell | after the first b |

### ComputeA
`
	got, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := &Doc{
		Series: []Series{
			{Name: "compute_a", Type: "gauge", Labels: []string{"x", "y"}, Role: RoleAll, Always: true},
			{Name: "compute_b_total", Type: "counter", Role: RoleCell},
		},
		Sections: []string{"ComputeA"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseRefusesBadRows(t *testing.T) {
	header := "| Series | Type | Labels | Exported by | Present |\n|---|---|---|---|---|\n"
	for name, row := range map[string]string{
		"a name outside compute_": "| `go_goroutines` | gauge | | all | always |",
		"an unknown type":         "| `compute_a` | summary | | all | always |",
		"an unknown role":         "| `compute_a` | gauge | | hub | always |",
		"a missing cell":          "| `compute_a` | gauge | all | always |",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(header + row + "\n")); err == nil {
				t.Errorf("Parse accepted %s", row)
			}
		})
	}
}

// TestEveryExportedMetricIsDocumented ties the table to the names the code
// exports.
func TestEveryExportedMetricIsDocumented(t *testing.T) {
	d, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	exported := []string{
		buildinfo.Metric, cellhealth.ReachableMetric,
		workload.RolloutsMetric, workload.RolloutDurationMetric, workload.WaveDurationMetric,
		projector.LagMetric, projector.UnresolvableMetric,
		projector.EventsProjectedMetric, projector.EventsRefusedMetric, podevents.ForwardedMetric,
		workloaddeployment.ToCellLagMetric, writeback.LagMetric,
		instance.QuotaWaitMetric, instance.QuotaRefusalsMetric, instance.GateWaitMetric,
		quota.EnforcementEnabledMetric, quota.EvalFailuresMetric, quota.ClaimOrphanedMetric,
		quotaservice.RefusalsMetric,
	}
	documented := make([]string, 0, len(d.Series))
	for _, s := range d.Series {
		documented = append(documented, s.Name)
	}
	slices.Sort(exported)
	slices.Sort(documented)
	if diff := cmp.Diff(exported, documented); diff != "" {
		t.Errorf("docs/metrics.md's series table and the metrics compute exports differ (-exported +documented):\n%s", diff)
	}
}
