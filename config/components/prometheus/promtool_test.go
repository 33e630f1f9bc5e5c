package prometheus_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/toolchain"
)

// ruleTests is the part of a promtool unit-test file the test reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `json:"eval_time"`
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// ruleFile is what promtool's rule_files name: the PrometheusRule's
// groups as a Prometheus rule file.
const ruleFile = "compute-rules.yaml"

// TestAlertsFireWhenTheyShouldAndOnlyThen runs Prometheus' own rule unit
// tests (promtool test rules, the pinned promtool that make test builds
// into the tool cache) on testdata/*.test.yaml against the PrometheusRule's
// rules: firing.test.yaml proves each alert fires on a series that should
// fire it, with its labels and annotations, and not before its `for`;
// healthy.test.yaml proves a healthy 3-city platform fires none. It fails
// when an alert of rules.yaml lacks either case.
func TestAlertsFireWhenTheyShouldAndOnlyThen(t *testing.T) {
	promtool, err := toolchain.Path(toolchain.Promtool)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRuleFile(t, filepath.Join(dir, ruleFile))

	files, err := filepath.Glob(filepath.Join("testdata", "*.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	var args []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rt ruleTests
		// Not strict: promtool's other fields (input_series, …) are its own.
		if err := yaml.Unmarshal(data, &rt); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !slices.Equal(rt.RuleFiles, []string{ruleFile}) {
			t.Errorf("%s: rule_files %v, want [%s]", f, rt.RuleFiles, ruleFile)
		}
		healthy := filepath.Base(f) == "healthy.test.yaml"
		for _, tc := range rt.Tests {
			for _, a := range tc.AlertRuleTest {
				switch {
				case len(a.ExpAlerts) > 0 && !healthy:
					fires[a.Alertname] = true
				case len(a.ExpAlerts) == 0 && healthy:
					// Quiet only counts once the alert could have fired:
					// after its rate window and `for`.
					if d, err := time.ParseDuration(a.EvalTime); err == nil && d >= time.Hour {
						quiet[a.Alertname] = true
					}
				case len(a.ExpAlerts) > 0:
					t.Errorf("%s: %q expects %s to fire on the healthy platform", f, tc.Name, a.Alertname)
				}
			}
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, dst)
	}
	for _, r := range readRules(t) {
		if !fires[r.Alert] {
			t.Errorf("no test of testdata/firing.test.yaml expects %s to fire", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("testdata/healthy.test.yaml does not check that %s stays quiet (eval_time 1h or later)", r.Alert)
		}
	}

	cmd := exec.Command(promtool, append([]string{"test", "rules"}, args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s test rules: %v\n%s", promtool, err, strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "testdata/"))
	}
	t.Logf("%s", out.String())
}

// writeRuleFile writes the PrometheusRule's spec (its groups) as the
// Prometheus rule file promtool reads.
func writeRuleFile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
