package workloads

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// SortWorkloads orders workloads by namespace and name.
func SortWorkloads(items []computev1alpha.Workload) {
	slices.SortFunc(items, func(a, b computev1alpha.Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// TableOptions choose the optional columns of Table: -A puts a NAMESPACE
// column first; -o wide adds REVISION and IMAGES.
type TableOptions = cmdutil.TableOptions

// Table renders workloads as NAME, CITIES, READY, UP-TO-DATE, HEALTH (the
// server's, as `status` shows it), AVAILABLE, AGE, with the optional
// columns of opts.
func Table(items []computev1alpha.Workload, now time.Time, opts TableOptions) *cmdutil.Table {
	t := opts.NewTable([]string{"NAME", "CITIES", "READY", "UP-TO-DATE", "HEALTH", "AVAILABLE~", "AGE"}, []string{"REVISION", "IMAGES~"})
	for i := range items {
		w := &items[i]
		opts.AddRow(t, w.Namespace, []string{w.Name,
			strings.Join(cmdutil.WorkloadCities(w), ","),
			fmt.Sprintf("%d/%d", w.Status.ReadyReplicas, Desired(w)),
			fmt.Sprint(w.Status.UpdatedReplicas),
			view.HealthWords(w.Status.Health),
			Available(w),
			cmdutil.Age(w.CreationTimestamp.Time, now)}, func() []string {
			return []string{fmt.Sprint(w.Status.CurrentRevision), images(w)}
		})
	}
	return t
}

// Available renders the Available condition: "Yes", "No (quota
// exceeded)", or "Pending" before the management plane reported.
func Available(w *computev1alpha.Workload) string {
	c := meta.FindStatusCondition(w.Status.Conditions, computev1alpha.ConditionAvailable)
	switch {
	case c == nil:
		return "Pending"
	case c.Status == metav1.ConditionTrue:
		return "Yes"
	case c.Reason == "":
		return "No"
	}
	return "No (" + cmdutil.Humanize(c.Reason) + ")"
}

// Desired is the number of instances w wants: as reported, or from its
// spec before the management plane has reported.
func Desired(w *computev1alpha.Workload) int32 {
	if w.Status.ObservedGeneration > 0 {
		return w.Status.DesiredReplicas
	}
	var n int32
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		n += p.ScaleSettings.MinReplicas * int32(len(cmdutil.PlacementCities(w, p)))
	}
	return n
}

// images lists the container images of w's template, or "(virtual
// machine)".
func images(w *computev1alpha.Workload) string {
	sb := w.Spec.Template.Spec.Runtime.Sandbox
	if sb == nil {
		return "(virtual machine)"
	}
	out := make([]string, 0, len(sb.Containers))
	for _, c := range sb.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}
