package instances

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/status"
)

// Description is what `instances describe` shows.
type Description struct {
	// Fields are label/value pairs in order.
	Fields [][2]string
	// Conditions is the conditions table.
	Conditions *cmdutil.Table
	// Events is the events table; nil when there are none.
	Events *cmdutil.Table
	// NextSteps say what to do about the instance's status.
	NextSteps []string
}

// Describe builds the description of inst. cmd renders command lines for
// next steps; canUndo says whether its workload has a revision to roll
// back to.
func Describe(inst *computev1alpha.Instance, events []corev1.Event, now time.Time, cmd func(string, ...any) string, canUndo bool) *Description {
	st := view.Instance(inst)
	d := &Description{}
	add := func(k, v string) {
		if v != "" {
			d.Fields = append(d.Fields, [2]string{k, v})
		}
	}
	l := inst.Labels
	add("Name", inst.Name)
	add("Namespace", inst.Namespace)
	add("Workload", l[computev1alpha.WorkloadNameLabel])
	add("Placement", l[computev1alpha.PlacementNameLabel])
	add("City", l[computev1alpha.CityCodeLabel])
	add("Index", l[computev1alpha.InstanceIndexLabel])
	add("Deployment", l[computev1alpha.WorkloadDeploymentNameLabel])
	add("Status", st.String())
	if st.Phase != status.PhaseAvailable {
		add("Message", cmdutil.OneLine(st.Message))
	}
	add("Type", view.InstanceType(inst))
	for _, c := range containers(inst) {
		add("Container", c)
	}
	add("Addresses", addresses(inst))
	add("Template", template(inst))
	if gates := schedulingGates(inst); gates != "" {
		add("Waiting for", gates)
	}
	add("Created", fmt.Sprintf("%s (%s ago)", inst.CreationTimestamp.UTC().Format(time.RFC3339),
		cmdutil.Age(inst.CreationTimestamp.Time, now)))

	d.Conditions = cmdutil.NewTable("TYPE", "STATUS", "REASON", "AGE", "MESSAGE~")
	conds := slices.Clone(inst.Status.Conditions)
	slices.SortFunc(conds, func(a, b metav1.Condition) int { return cmp.Compare(conditionOrder(a.Type), conditionOrder(b.Type)) })
	for _, c := range conds {
		d.Conditions.AddRow(c.Type, string(c.Status), c.Reason, cmdutil.Age(c.LastTransitionTime.Time, now), c.Message)
	}

	if len(events) > 0 {
		evs := slices.Clone(events)
		slices.SortStableFunc(evs, func(a, b corev1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
		d.Events = cmdutil.NewTable("AGE", "TYPE", "REASON", "MESSAGE~")
		for i := range evs {
			e := &evs[i]
			d.Events.AddRow(cmdutil.Age(eventTime(e), now), e.Type, e.Reason, e.Message)
		}
	}
	d.NextSteps = status.NextSteps(st.Reason, status.Hints{Cmd: cmd, Workload: l[computev1alpha.WorkloadNameLabel],
		City: l[computev1alpha.CityCodeLabel], CanUndo: canUndo})
	return d
}

// Render writes the description. Its tables are aligned whatever the
// output, since the description is a document, not a listing.
func (d *Description) Render(w io.Writer, _ bool, width int) error {
	var b strings.Builder
	labelWidth := 0
	for _, f := range d.Fields {
		labelWidth = max(labelWidth, len(f[0])+1)
	}
	for _, f := range d.Fields {
		fmt.Fprintf(&b, "%-*s  %s\n", labelWidth, f[0]+":", f[1])
	}
	b.WriteString("\nConditions:\n")
	if len(d.Conditions.Rows) == 0 {
		b.WriteString("  none reported yet\n")
	} else if err := d.Conditions.Render(indent{&b}, true, width-2); err != nil {
		return err
	}
	if d.Events != nil {
		b.WriteString("\nEvents:\n")
		if err := d.Events.Render(indent{&b}, true, width-2); err != nil {
			return err
		}
	}
	if len(d.NextSteps) > 0 {
		b.WriteString("\nNext steps:\n")
		for _, s := range d.NextSteps {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// indent writes every line it is given indented by two spaces.
type indent struct{ b *strings.Builder }

// Write indents p line by line.
func (i indent) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line != "" {
			i.b.WriteString("  " + line)
		}
	}
	return len(p), nil
}

// containers describes each container: "app  ghcr.io/acme/web:1.2  ports
// http:8080/TCP".
func containers(inst *computev1alpha.Instance) []string {
	sb := inst.Spec.Runtime.Sandbox
	if sb == nil {
		if inst.Spec.Runtime.VirtualMachine != nil {
			return []string{"virtual machine"}
		}
		return nil
	}
	out := make([]string, 0, len(sb.Containers))
	for _, c := range sb.Containers {
		s := c.Name + "  " + c.Image
		if ports := PortList(c.Ports); ports != "" {
			s += "  ports " + ports
		}
		out = append(out, s)
	}
	return out
}

// PortList renders ports as "http:8080/TCP, dns:53/UDP".
func PortList(ports []computev1alpha.NamedPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		parts = append(parts, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, proto))
	}
	return strings.Join(parts, ", ")
}

// addresses renders the interface addresses: "network 10.0.0.4, external
// 203.0.113.10".
func addresses(inst *computev1alpha.Instance) string {
	var parts []string
	for _, nic := range inst.Status.NetworkInterfaces {
		if ip := nic.Assignments.NetworkIP; ip != nil && *ip != "" {
			parts = append(parts, "network "+*ip)
		}
		if ip := nic.Assignments.ExternalIP; ip != nil && *ip != "" {
			parts = append(parts, "external "+*ip)
		}
	}
	if len(parts) == 0 {
		return "none assigned yet"
	}
	return strings.Join(parts, ", ")
}

// template renders the template hashes: "5c7d9f (running 5c7d9f)".
func template(inst *computev1alpha.Instance) string {
	if inst.Spec.Controller == nil {
		return ""
	}
	s := inst.Spec.Controller.TemplateHash
	if st := inst.Status.Controller; st != nil && st.ObservedTemplateHash != "" {
		s += " (running " + st.ObservedTemplateHash + ")"
	}
	return s
}

// schedulingGates lists the gates holding the instance.
func schedulingGates(inst *computev1alpha.Instance) string {
	if inst.Spec.Controller == nil {
		return ""
	}
	names := make([]string, 0, len(inst.Spec.Controller.SchedulingGates))
	for _, g := range inst.Spec.Controller.SchedulingGates {
		names = append(names, g.Name)
	}
	return strings.Join(names, ", ")
}

// conditionOrder puts Ready first, then the provider's and quota's
// conditions, then anything else.
func conditionOrder(t string) int {
	switch t {
	case computev1alpha.ConditionReady:
		return 0
	case computev1alpha.ConditionAvailable:
		return 1
	case computev1alpha.ConditionProgrammed:
		return 2
	case computev1alpha.ConditionQuotaGranted:
		return 3
	}
	return 4
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
