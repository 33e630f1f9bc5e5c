package view

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// FailoverNote explains, for a command that changes w's template or
// rollout, what a failover in progress means for it; empty when no
// Location of w is failed over.
func FailoverNote(w *computev1alpha.Workload) string {
	c := meta.FindStatusCondition(w.Status.Conditions, computev1alpha.ConditionFailedOver)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	var moves []string
	for _, p := range w.Status.Placements {
		for _, cs := range p.Cities {
			if f := cs.Failover; f != nil && f.CityCode != "" {
				moves = append(moves, fmt.Sprintf("%s's replicas run in %s", cs.CityCode, f.CityCode))
			}
		}
	}
	if len(moves) == 0 {
		return ""
	}
	return fmt.Sprintf("Note: %s while their cells are unreachable (failover). A template change or restart reaches the fallback "+
		"replicas with their city's wave, and the unreachable city when it is back; the fallback drains once the city has been "+
		"Available for the placement's returnAfterSeconds.", strings.Join(moves, "; "))
}

// failoverState is what a city's failover adds to its state in the city
// table: where its replicas run, or whom it stands in for.
func failoverState(c City) string {
	switch {
	case c.FailoverFor != "":
		return "failover for " + c.FailoverFor
	case c.Failover == nil:
		return ""
	}
	f := c.Failover
	switch f.Phase {
	case computev1alpha.FailoverTolerating:
		return "fails over at " + clockOf(f.FailoverAt)
	case computev1alpha.FailoverPending:
		return "failover pending"
	case computev1alpha.FailoverReturning:
		return fmt.Sprintf("failed over to %s, returns at %s", f.CityCode, clockOf(f.ReturnAt))
	}
	return "failed over to " + f.CityCode
}

func clockOf(t *metav1.Time) string {
	if t == nil {
		return "?"
	}
	return t.UTC().Format("15:04:05")
}
