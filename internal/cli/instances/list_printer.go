package instances

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
)

// SortInstances orders instances by workload, city, ordinal and name.
func SortInstances(items []computev1alpha.Instance) {
	slices.SortFunc(items, func(a, b computev1alpha.Instance) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Labels[computev1alpha.WorkloadNameLabel], b.Labels[computev1alpha.WorkloadNameLabel]),
			cmp.Compare(a.Labels[computev1alpha.CityCodeLabel], b.Labels[computev1alpha.CityCodeLabel]),
			cmp.Compare(ordinal(&a), ordinal(&b)),
			cmp.Compare(a.Name, b.Name))
	})
}

// ordinal returns the instance-index label as a number; -1 when missing.
func ordinal(i *computev1alpha.Instance) int {
	n, err := strconv.Atoi(i.Labels[computev1alpha.InstanceIndexLabel])
	if err != nil {
		return -1
	}
	return n
}

// Table renders instances as NAME, WORKLOAD, CITY, IP, TYPE, AGE, STATUS;
// allNamespaces puts a NAMESPACE column first.
func Table(items []computev1alpha.Instance, now time.Time, allNamespaces bool) *cmdutil.Table {
	headers := []string{"NAME", "WORKLOAD", "CITY", "IP", "TYPE", "AGE", "STATUS~"}
	if allNamespaces {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	t := cmdutil.NewTable(headers...)
	for i := range items {
		inst := &items[i]
		var ns []string
		if allNamespaces {
			ns = []string{inst.Namespace}
		}
		t.AddRow(append(ns, inst.Name,
			inst.Labels[computev1alpha.WorkloadNameLabel],
			inst.Labels[computev1alpha.CityCodeLabel],
			dash(view.InstanceIP(inst)),
			dash(view.InstanceType(inst)),
			cmdutil.Age(inst.CreationTimestamp.Time, now),
			view.Instance(inst).String())...)
	}
	return t
}

// Summary counts instances by phase: "4 instances: 3 available, 1
// failed".
func Summary(items []computev1alpha.Instance) string {
	counts := map[string]int{}
	for i := range items {
		counts[view.Instance(&items[i]).Phase]++
	}
	var parts []string
	for _, phase := range []string{view.PhaseAvailable, view.PhaseStarting, view.PhasePending, view.PhaseFailed, view.PhaseTerminating} {
		if n := counts[phase]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(phase)))
		}
	}
	return cmdutil.Plural(len(items), "instance", "instances") + ": " + strings.Join(parts, ", ")
}

// dash returns s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
