package instancetypes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// phaseRank orders the phases: the types to choose first, the retired last.
var phaseRank = map[computev1alpha.InstanceTypeLifecyclePhase]int{
	computev1alpha.InstanceTypePhaseActive:     0,
	computev1alpha.InstanceTypePhaseDeprecated: 1,
	computev1alpha.InstanceTypePhaseDisabled:   2,
}

// Sort orders types by phase (Active first), then by size (vCPU, then
// memory), then by name.
func Sort(items []computev1alpha.InstanceType) {
	slices.SortFunc(items, func(a, b computev1alpha.InstanceType) int {
		return cmp.Or(
			cmp.Compare(phaseRank[a.Spec.Lifecycle.Phase], phaseRank[b.Spec.Lifecycle.Phase]),
			a.Spec.Resources.CPU.Cmp(b.Spec.Resources.CPU),
			a.Spec.Resources.Memory.Cmp(b.Spec.Resources.Memory),
			cmp.Compare(a.Name, b.Name))
	})
}

// Table renders types as NAME, PHASE, CPU, MEMORY, REPLACEMENT; -o wide adds
// DISPLAY-NAME, ALSO-ACCEPTED (retired spellings of the type), READY and
// DEPRECATED (how long ago the type was deprecated).
func Table(items []computev1alpha.InstanceType, now time.Time, opts cmdutil.TableOptions) *cmdutil.Table {
	t := opts.NewTable([]string{"NAME", "PHASE", "CPU", "MEMORY", "REPLACEMENT"},
		[]string{"DISPLAY-NAME~", "ALSO-ACCEPTED", "READY", "DEPRECATED"})
	for i := range items {
		it := &items[i]
		opts.AddRow(t, "", []string{it.Name,
			cmdutil.Dash(string(it.Spec.Lifecycle.Phase)),
			it.Spec.Resources.CPU.String(),
			it.Spec.Resources.Memory.String(),
			cmdutil.Dash(it.Spec.Lifecycle.ReplacementInstanceType)}, func() []string {
			deprecated := "-"
			if at := it.Status.DeprecatedAt; at != nil {
				deprecated = cmdutil.Age(at.Time, now) + " ago"
			}
			return []string{cmdutil.Dash(it.Spec.DisplayName), cmdutil.Dash(strings.Join(catalog.AliasesOf(it.Name), ",")), ready(it), deprecated}
		})
	}
	return t
}

// Summary counts the types by phase and names the default: "4 instance
// types: 3 active, 1 deprecated; a workload that names none gets
// datumcloud-d1-standard-2".
func Summary(items []computev1alpha.InstanceType) string {
	counts := map[computev1alpha.InstanceTypeLifecyclePhase]int{}
	for i := range items {
		counts[items[i].Spec.Lifecycle.Phase]++
	}
	var parts []string
	for _, p := range []computev1alpha.InstanceTypeLifecyclePhase{
		computev1alpha.InstanceTypePhaseActive, computev1alpha.InstanceTypePhaseDeprecated, computev1alpha.InstanceTypePhaseDisabled,
	} {
		if n := counts[p]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(string(p))))
		}
	}
	return cmdutil.Plural(len(items), "instance type", "instance types") + ": " + strings.Join(parts, ", ") +
		"; a workload that names none gets " + catalog.DefaultInstanceType
}

// ready renders the Ready condition: "True", "False (<reason>)", "-" before
// the management plane reported it.
func ready(it *computev1alpha.InstanceType) string {
	c := meta.FindStatusCondition(it.Status.Conditions, computev1alpha.InstanceTypeConditionReady)
	switch {
	case c == nil:
		return "-"
	case c.Status == "True" || c.Reason == "":
		return string(c.Status)
	}
	return fmt.Sprintf("%s (%s)", c.Status, cmdutil.Humanize(c.Reason))
}
