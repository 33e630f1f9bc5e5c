package instances

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/view"
	"github.com/citycells/compute/internal/status"
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

// TableOptions choose the optional columns of Table: -A puts a NAMESPACE
// column first; -o wide adds PLACEMENT, QUOTA, NETWORK-IP and EXTERNAL-IP.
type TableOptions = cmdutil.TableOptions

// Table renders instances as NAME, WORKLOAD, CITY, IP, TYPE, AGE, STATUS,
// with the optional columns of opts.
func Table(items []computev1alpha.Instance, now time.Time, opts TableOptions) *cmdutil.Table {
	t := opts.NewTable([]string{"NAME", "WORKLOAD", "CITY", "IP", "TYPE", "AGE", "STATUS~"},
		[]string{"PLACEMENT", "QUOTA", "NETWORK-IP", "EXTERNAL-IP"})
	for i := range items {
		inst := &items[i]
		opts.AddRow(t, inst.Namespace, []string{inst.Name,
			inst.Labels[computev1alpha.WorkloadNameLabel],
			inst.Labels[computev1alpha.CityCodeLabel],
			cmdutil.Dash(view.InstanceIP(inst)),
			cmdutil.Dash(view.InstanceType(inst)),
			cmdutil.Age(inst.CreationTimestamp.Time, now),
			view.Instance(inst).String()}, func() []string {
			network, external := wideAddresses(inst)
			return []string{cmdutil.Dash(inst.Labels[computev1alpha.PlacementNameLabel]), quota(inst), cmdutil.Dash(network), cmdutil.Dash(external)}
		})
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
	for _, phase := range []string{status.PhaseAvailable, status.PhaseStarting, status.PhasePending, status.PhaseFailed, status.PhaseTerminating} {
		if n := counts[phase]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(phase)))
		}
	}
	return cmdutil.Plural(len(items), "instance", "instances") + ": " + strings.Join(parts, ", ")
}

// quota renders the QuotaGranted condition: "Granted", the humanized
// reason when not granted, "-" before the cell reported.
func quota(inst *computev1alpha.Instance) string {
	c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return "Granted"
	case c.Reason != "":
		return cmdutil.Humanize(c.Reason)
	}
	return string(c.Status)
}

// wideAddresses returns the first network and external IP of inst.
func wideAddresses(inst *computev1alpha.Instance) (network, external string) {
	for _, nic := range inst.Status.NetworkInterfaces {
		if ip := nic.Assignments.NetworkIP; ip != nil && network == "" {
			network = *ip
		}
		if ip := nic.Assignments.ExternalIP; ip != nil && external == "" {
			external = *ip
		}
	}
	return network, external
}
