package workloadstatus

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/failover"
	"github.com/citycells/compute/internal/status"
)

// failoverOf fills the failover of city c into cs: its own (a Location
// unreachable or failed over) or the one it is the fallback of.
func failoverOf(cs *computev1alpha.WorkloadCityStatus, c City, decisions map[string]*failover.Decision) {
	if d := decisions[c.Key()]; d != nil && d.Status.Phase != "" {
		f := *d.Status.DeepCopy()
		f.Message = status.Truncate(f.Message)
		cs.Failover = &f
	}
	if src := c.FailoverFor; src != nil {
		cs.FailoverFor = &computev1alpha.FailoverSource{CityCode: src.CityCode, Location: src.Location.DeepCopy(), DeploymentName: src.Name}
	}
}

// hasFailover reports whether a placement of w has failover.
func hasFailover(w *computev1alpha.Workload) bool {
	return slices.ContainsFunc(w.Spec.Placements, func(p computev1alpha.WorkloadPlacement) bool { return p.Failover != nil })
}

// failoverCondition sets FailedOver on a Workload with a placement that
// has failover — True while a Location's replicas run in a fallback, False
// with FailoverPending while one is unreachable (within or past its
// toleration) and none runs its replicas, else False with NoFailover — and
// removes it from a Workload without. Earlier transitions are kept from
// w's status.
func failoverCondition(conds []metav1.Condition, w *computev1alpha.Workload, cities []computev1alpha.WorkloadCityStatus, now metav1.Time) []metav1.Condition {
	out := slices.DeleteFunc(slices.Clone(conds), func(c metav1.Condition) bool { return c.Type == computev1alpha.ConditionFailedOver })
	if !hasFailover(w) {
		return out
	}
	var over, waiting []string
	for _, c := range cities {
		if c.Failover == nil {
			continue
		}
		switch c.Failover.Phase {
		case computev1alpha.FailoverFailedOver, computev1alpha.FailoverReturning:
			over = append(over, c.Failover.Message)
		default:
			waiting = append(waiting, c.Failover.Message)
		}
	}
	cond := metav1.Condition{Type: computev1alpha.ConditionFailedOver, Status: metav1.ConditionFalse,
		Reason: computev1alpha.ReasonNoFailover, Message: "every Location of the Workload is reachable", ObservedGeneration: w.Generation}
	switch {
	case len(over) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, computev1alpha.ReasonFailedOver, strings.Join(append(over, waiting...), "; ")
	case len(waiting) > 0:
		cond.Reason, cond.Message = computev1alpha.ReasonFailoverPending, strings.Join(waiting, "; ")
	}
	cond.Message = status.Truncate(cond.Message)
	if prev := meta.FindStatusCondition(w.Status.Conditions, cond.Type); prev != nil {
		out = append(out, *prev)
	}
	status.SetCondition(&out, cond, now)
	slices.SortFunc(out, func(a, b metav1.Condition) int { return cmp.Compare(a.Type, b.Type) })
	return out
}
