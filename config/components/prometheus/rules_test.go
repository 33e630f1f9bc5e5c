// Package prometheus_test checks the prometheus component's PrometheusRule
// and Grafana dashboard: every expression parses with Prometheus' own PromQL
// parser (github.com/prometheus/prometheus/promql/parser), every alert links
// a runbook section of docs/metrics.md, and every compute_* series they read
// is in docs/metrics.md's table. promtool_test.go proves with promtool's rule
// unit tests that each alert fires when it should and only then.
package prometheus_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/citycells/compute/internal/metricsdoc"
)

// rule is the part of a PrometheusRule rule the test reads.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile("rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &pr); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	if pr.Kind != "PrometheusRule" {
		t.Fatalf("rules.yaml is a %q, want a PrometheusRule", pr.Kind)
	}
	var out []rule
	for _, g := range pr.Spec.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("rules.yaml has no rules")
	}
	return out
}

// seriesOf returns the metric names expr selects, without the _bucket,
// _sum and _count suffixes of a histogram.
func seriesOf(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				name = strings.TrimSuffix(name, suffix)
			}
			names = append(names, name)
		}
		return nil
	})
	return names
}

func TestEveryAlertParsesAndHasARunbook(t *testing.T) {
	doc, err := metricsdoc.Read()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range readRules(t) {
		t.Run(r.Alert, func(t *testing.T) {
			if r.Alert == "" || seen[r.Alert] {
				t.Fatalf("a rule without a unique alert name: %q", r.Alert)
			}
			seen[r.Alert] = true
			expr, err := parser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("expr does not parse: %v\n%s", err, r.Expr)
			}
			if expr.Type() != parser.ValueTypeVector {
				t.Errorf("expr is a %s, an alert needs an instant vector", expr.Type())
			}
			for _, name := range seriesOf(expr) {
				if _, ok := doc.Find(name); strings.HasPrefix(name, "compute_") && !ok {
					t.Errorf("expr reads %s, which docs/metrics.md's table does not list", name)
				}
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("severity %q, want warning or critical", s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("annotation %s is missing", a)
				}
			}
			anchor := "docs/metrics.md#" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], anchor) {
				t.Errorf("runbook_url %q does not end in %s", r.Annotations["runbook_url"], anchor)
			}
			if !slices.Contains(doc.Sections, r.Alert) {
				t.Errorf("docs/metrics.md has no runbook section \"### %s\"", r.Alert)
			}
		})
	}
}

func TestDashboardQueriesParse(t *testing.T) {
	doc, err := metricsdoc.Read()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	read := map[string]bool{}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			// Grafana's interval variable is not PromQL.
			q := strings.ReplaceAll(target.Expr, "$__rate_interval", "5m")
			expr, err := parser.ParseExpr(q)
			if err != nil {
				t.Errorf("panel %q: query does not parse: %v\n%s", p.Title, err, target.Expr)
				continue
			}
			for _, name := range seriesOf(expr) {
				read[name] = true
			}
		}
	}
	for _, s := range doc.Series {
		if !read[s.Name] {
			t.Errorf("no panel of the dashboard shows %s", s.Name)
		}
	}
}
