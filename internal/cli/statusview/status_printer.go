package statusview

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/status"
)

// View is what `status` shows, and prints with -o json|yaml.
type View struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name and Namespace of the workload.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Health is Healthy, Progressing, Degraded, Failing or Scaled to zero.
	Health string `json:"health"`
	// Line is the one-line progress: "DFW 2/2 ready · LHR 1/2 starting".
	Line string `json:"summary"`
	// Images are the container images of the template.
	Images []string `json:"images,omitempty"`
	// Revision is the current template revision; 0 until reported.
	Revision int64 `json:"revision,omitempty"`
	// Generation and ObservedGeneration tell whether the management plane
	// has caught up with the spec.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	// Ready, Updated and Desired count instances over every city.
	Ready   int32 `json:"ready"`
	Updated int32 `json:"updated"`
	Desired int32 `json:"desired"`
	// Available is the Workload's Available condition, when reported.
	Available *metav1.Condition `json:"available,omitempty"`
	// InstanceType is the InstanceTypeDeprecated or InstanceTypeDisabled
	// condition while the workload's instance type is being retired: its
	// message names the replacement.
	InstanceType *metav1.Condition `json:"instanceType,omitempty"`
	// Failover is the FailedOver condition while a city is unreachable or
	// failed over (reason FailoverPending or FailedOver).
	Failover *metav1.Condition `json:"failover,omitempty"`
	// Waiting says what the workload waits for, if anything.
	Waiting string `json:"waiting,omitempty"`
	// Cities are the per-city states.
	Cities []view.City `json:"cities"`
	// Blockers are the reasons instances do not serve, worst first.
	Blockers []Blocker `json:"blockers,omitempty"`
	// Autoscaling are the placements that autoscale, with their
	// conditions.
	Autoscaling []Autoscaling `json:"autoscaling,omitempty"`
}

// Blocker is a reason something does not serve, with the next steps.
type Blocker struct {
	// City it was seen in.
	City string `json:"city"`
	// Instances it was seen on; empty for a city-level reason. More
	// counts those the server did not name.
	Instances []string `json:"instances,omitempty"`
	More      int32    `json:"more,omitempty"`
	// Status in words.
	Status string `json:"status"`
	// Reason is the condition reason.
	Reason string `json:"reason"`
	// Message is the condition message.
	Message string `json:"message,omitempty"`
	// Terminal is set when waiting will not fix it.
	Terminal bool `json:"terminal"`
	// NextSteps say what to do.
	NextSteps []string `json:"nextSteps,omitempty"`
}

// Build computes the view of a snapshot: the server's verdicts, in words.
// cmd renders command lines for next steps.
func Build(s view.Snapshot, cmd func(string, ...any) string) *View {
	w := s.Workload
	p := view.Read(s, view.Expectation{})
	v := &View{
		APIVersion: cmdutil.ViewAPIVersion, Kind: "WorkloadStatus",
		Name: w.Name, Namespace: w.Namespace,
		Health: view.HealthWords(p.Health), Line: p.Line(),
		Images:     images(w),
		Revision:   w.Status.CurrentRevision,
		Generation: w.Generation, ObservedGeneration: w.Status.ObservedGeneration,
		Ready: p.Ready, Updated: p.Updated, Desired: p.Desired,
		Waiting: p.Waiting, Cities: p.Cities,
		Available:    conditionIn(w.Status.Conditions, computev1alpha.ConditionAvailable),
		InstanceType: instanceTypeCondition(w),
	}
	if c := conditionIn(w.Status.Conditions, computev1alpha.ConditionFailedOver); c != nil && c.Reason != computev1alpha.ReasonNoFailover {
		v.Failover = c
	}
	hints := status.Hints{Cmd: cmd, Workload: w.Name, CanUndo: w.Status.CurrentRevision > 1,
		Failover: slices.ContainsFunc(w.Spec.Placements, func(p computev1alpha.WorkloadPlacement) bool { return p.Failover != nil })}
	seen := map[string]bool{}
	for _, g := range view.GroupFailures(p.Failures) {
		v.Blockers = append(v.Blockers, Blocker{City: g.City, Instances: g.Instances, More: g.More, Status: g.Status, Reason: g.Reason,
			Message: g.Message, Terminal: true, NextSteps: nextSteps(hints, g.City, g.Reason, seen)})
	}
	for _, c := range p.Cities {
		if c.Done || c.Failed || c.Reason == "" || slices.ContainsFunc(v.Blockers, func(b Blocker) bool {
			return b.City == c.City && b.Reason == c.Reason
		}) {
			continue
		}
		v.Blockers = append(v.Blockers, Blocker{City: c.City, Status: c.State, Reason: c.Reason, Message: c.Message,
			NextSteps: nextSteps(hints, c.City, c.Reason, seen)})
	}
	v.Autoscaling = autoscalingOf(w, hints, seen)
	return v
}

// conditionIn returns a copy of the condition of type t in conds; nil when
// absent.
func conditionIn(conds []metav1.Condition, t string) *metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		cc := *c
		return &cc
	}
	return nil
}

// instanceTypeCondition is the InstanceTypeDisabled or
// InstanceTypeDeprecated condition while the instance type is retired.
func instanceTypeCondition(w *computev1alpha.Workload) *metav1.Condition {
	for _, t := range []string{computev1alpha.InstanceTypeConditionDisabled, computev1alpha.InstanceTypeConditionDeprecated} {
		if c := conditionIn(w.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// nextSteps returns the next steps for reason in city, once per reason.
func nextSteps(h status.Hints, city, reason string, seen map[string]bool) []string {
	if seen[reason] {
		return nil
	}
	seen[reason] = true
	h.City = city
	return status.NextSteps(reason, h)
}

// images lists the container images of w's template.
func images(w *computev1alpha.Workload) []string {
	sb := w.Spec.Template.Spec.Runtime.Sandbox
	if sb == nil {
		return nil
	}
	out := make([]string, 0, len(sb.Containers))
	for _, c := range sb.Containers {
		if len(sb.Containers) == 1 {
			out = append(out, c.Image)
		} else {
			out = append(out, c.Name+"="+c.Image)
		}
	}
	return out
}

// header returns the label/value lines above the city table.
func (v *View) header() [][2]string {
	health := fmt.Sprintf("%s — %d/%d instances ready, %d/%d up to date", v.Health, v.Ready, v.Desired, v.Updated, v.Desired)
	rows := [][2]string{
		{"Workload", fmt.Sprintf("%s (namespace %s)", v.Name, v.Namespace)},
		{"Health", health},
	}
	if v.Available != nil && v.Available.Status != metav1.ConditionTrue && v.Available.Message != "" {
		rows = append(rows, [2]string{"Available", fmt.Sprintf("%s — %s", v.Available.Reason, cmdutil.OneLine(v.Available.Message))})
	}
	if v.InstanceType != nil {
		rows = append(rows, [2]string{"Type", cmdutil.OneLine(v.InstanceType.Message)})
	}
	if v.Failover != nil {
		rows = append(rows, [2]string{"Failover", cmdutil.OneLine(v.Failover.Message)})
	}
	if len(v.Images) > 0 {
		rows = append(rows, [2]string{"Image", strings.Join(v.Images, ", ")})
	}
	rev := "not recorded yet"
	if v.Revision > 0 {
		rev = fmt.Sprint(v.Revision)
	}
	rows = append(rows, [2]string{"Revision", rev})
	if v.Waiting != "" {
		rows = append(rows, [2]string{"Waiting", v.Waiting})
	}
	return rows
}

// CityTable renders the cities as CITY, LOCATION, PLACEMENT, READY,
// UP-TO-DATE, STATE.
func (v *View) CityTable() *cmdutil.Table {
	t := cmdutil.NewTable("CITY", "LOCATION", "PLACEMENT", "READY", "UP-TO-DATE", "STATE~")
	for _, c := range v.Cities {
		t.AddRow(cmp.Or(c.City, "-"), cmp.Or(c.Location, "-"), c.Placement,
			fmt.Sprintf("%d/%d", c.Ready, c.Desired), fmt.Sprintf("%d/%d", c.Updated, c.Desired), c.StateText())
	}
	return t
}

// Render writes the view for a terminal or a pipe.
func (v *View) Render(w io.Writer, terminal bool, width int) error {
	var b strings.Builder
	for _, line := range v.lines(terminal, width) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Lines renders the view as lines for a live terminal frame.
func (v *View) Lines(width int) []string { return v.lines(true, width) }

// lines renders the view.
func (v *View) lines(terminal bool, width int) []string {
	out := make([]string, 0, len(v.Cities)+len(v.Blockers)+10)
	for _, r := range v.header() {
		out = append(out, fmt.Sprintf("%-10s %s", r[0]+":", r[1]))
	}
	out = append(out, "")
	if len(v.Cities) == 0 {
		out = append(out, "No cities.")
	} else {
		// The status is a document, not a listing: its table is aligned
		// in a pipe too, but only cut to fit on a terminal.
		if !terminal {
			width = 0
		}
		var tb strings.Builder
		_ = v.CityTable().Render(&tb, true, width)
		out = append(out, strings.Split(strings.TrimRight(tb.String(), "\n"), "\n")...)
	}
	out = append(out, v.autoscalingLines()...)
	if len(v.Blockers) > 0 {
		out = append(out, "", "Blocking:")
		for _, b := range v.Blockers {
			subject := view.FailureGroup{City: b.City, Instances: b.Instances, More: b.More}.Subject()
			line := fmt.Sprintf("  %s: %s", subject, b.Status)
			if b.Message != "" {
				line += " — " + cmdutil.OneLine(b.Message)
			}
			out = append(out, line)
			for _, s := range b.NextSteps {
				out = append(out, "    → "+s)
			}
		}
	}
	return out
}
