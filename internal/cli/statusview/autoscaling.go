package statusview

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/status"
)

// Autoscaling is one placement that autoscales, as the server reports it:
// its bounds and its AutoscalingReady and AutoscalingLimited conditions
// (the cities' own reports are in Cities[].autoscaling).
type Autoscaling struct {
	// Placement is the placement's name.
	Placement string `json:"placement"`
	// MinReplicas and MaxReplicas are the placement's bounds per city.
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
	// Ready and Limited are the placement's AutoscalingReady and
	// AutoscalingLimited conditions, once reported.
	Ready   *metav1.Condition `json:"ready,omitempty"`
	Limited *metav1.Condition `json:"limited,omitempty"`
	// NextSteps say what to do while Ready is False.
	NextSteps []string `json:"nextSteps,omitempty"`
}

// autoscalingOf lists the placements of w that autoscale. seen holds the
// reasons whose next steps were already given.
func autoscalingOf(w *computev1alpha.Workload, hints status.Hints, seen map[string]bool) []Autoscaling {
	out := make([]Autoscaling, 0, len(w.Spec.Placements))
	for _, p := range w.Spec.Placements {
		if !p.ScaleSettings.Autoscales() {
			continue
		}
		a := Autoscaling{Placement: p.Name, MinReplicas: p.ScaleSettings.MinReplicas, MaxReplicas: *p.ScaleSettings.MaxReplicas}
		for _, ps := range w.Status.Placements {
			if ps.Name == p.Name {
				a.Ready = conditionIn(ps.Conditions, computev1alpha.ConditionAutoscalingReady)
				a.Limited = conditionIn(ps.Conditions, computev1alpha.ConditionAutoscalingLimited)
			}
		}
		if a.Ready != nil && a.Ready.Status == metav1.ConditionFalse {
			a.NextSteps = nextSteps(hints, "", a.Ready.Reason, seen)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil // -o json: no autoscaling key
	}
	return out
}

// autoscalingLines renders the Autoscaling section: a line per city of a
// placement that autoscales ("DFW: autoscaling 1–4, 3 replicas, cpu
// 72%/50%"), then, per placement, what keeps its autoscalers from scaling
// or holds them at a bound.
func (v *View) autoscalingLines() []string {
	if len(v.Autoscaling) == 0 {
		return nil
	}
	out := []string{"", "Autoscaling:"}
	for _, a := range v.Autoscaling {
		for _, c := range v.Cities {
			if c.Placement == a.Placement {
				out = append(out, fmt.Sprintf("  %s: %s", cityLabel(c, len(v.Autoscaling) > 1), autoscalerWords(a, c.Autoscaling)))
			}
		}
		if r := a.Ready; r != nil && r.Status != metav1.ConditionTrue {
			word := "not ready"
			if r.Status == metav1.ConditionUnknown {
				word = "pending"
			}
			out = append(out, fmt.Sprintf("  %s: autoscaler %s (%s) — %s", a.Placement, word, r.Reason, cmdutil.OneLine(r.Message)))
		}
		if l := a.Limited; l != nil && l.Status == metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("  %s: held at a bound (%s) — %s", a.Placement, l.Reason, cmdutil.OneLine(l.Message)))
		}
		for _, s := range a.NextSteps {
			out = append(out, "    → "+s)
		}
	}
	return out
}

// cityLabel names a city in the Autoscaling section, with its Location when
// the city has several and its placement when several autoscale.
func cityLabel(c view.City, placements bool) string {
	label := c.City
	if c.Location != "" && c.Location != strings.ToLower(c.City) {
		label += " (" + c.Location + ")"
	}
	if placements {
		label = c.Placement + "/" + label
	}
	return label
}

// autoscalerWords says what a city's autoscaler reports: "autoscaling 1–4,
// 3 replicas, cpu 72%/50%"; the placement's bounds and "waiting for the
// autoscaler" before the city reports.
func autoscalerWords(a Autoscaling, as *computev1alpha.AutoscalingStatus) string {
	if as == nil {
		return fmt.Sprintf("autoscaling %d–%d, waiting for the autoscaler", a.MinReplicas, a.MaxReplicas)
	}
	parts := []string{fmt.Sprintf("autoscaling %d–%d", as.MinReplicas, as.MaxReplicas)}
	if as.DesiredReplicas != as.CurrentReplicas {
		parts = append(parts, fmt.Sprintf("%d → %d replicas", as.CurrentReplicas, as.DesiredReplicas))
	} else {
		parts = append(parts, cmdutil.Plural(int(as.CurrentReplicas), "replica", "replicas"))
	}
	for _, m := range as.Metrics {
		parts = append(parts, metricWords(m))
	}
	return strings.Join(parts, ", ")
}

// metricWords is a metric against its target: "cpu 72%/50%", "memory
// 300Mi/512Mi", "cpu ?/50%" while not read.
func metricWords(m computev1alpha.AutoscalingMetricStatus) string {
	current, target := "?", "?"
	switch t := m.Target; {
	case t.AverageUtilization != nil:
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
		if m.CurrentAverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *m.CurrentAverageUtilization)
		}
	case t.AverageValue != nil:
		target = t.AverageValue.String()
		if m.CurrentAverageValue != nil {
			current = m.CurrentAverageValue.String()
		}
	case t.Value != nil:
		target = t.Value.String()
	}
	return fmt.Sprintf("%s %s/%s", m.Name, current, target)
}
