package view

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestACitysFailoverShowsInItsStateAndInTheNoteOfCommandsThatChangeTheTemplate(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 27, 12, 5, 3, 0, time.UTC))
	lhr := computev1alpha.WorkloadCityStatus{CityCode: "LHR", State: computev1alpha.CityStateFailedOver, Stale: true, LastSeenTime: &at,
		Failover: &computev1alpha.CityFailoverStatus{Phase: computev1alpha.FailoverFailedOver, CityCode: "SIN", FailoverAt: &at}}
	sin := computev1alpha.WorkloadCityStatus{CityCode: "SIN", State: computev1alpha.CityStateReady, FailoverFor: &computev1alpha.FailoverSource{CityCode: "LHR"}}
	w := &computev1alpha.Workload{Status: computev1alpha.WorkloadStatus{
		Conditions: []metav1.Condition{{Type: computev1alpha.ConditionFailedOver, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonFailedOver}},
		Placements: []computev1alpha.WorkloadPlacementStatus{{Name: "edge", Cities: []computev1alpha.WorkloadCityStatus{lhr, sin}}},
	}}
	now := at.Add(time.Minute)
	if got := readCity("edge", lhr, Expectation{}, now).StateText(); !strings.HasSuffix(got, "; failed over to SIN") {
		t.Errorf("LHR's state: %q", got)
	}
	if got := readCity("edge", sin, Expectation{}, now).StateText(); !strings.HasSuffix(got, "; failover for LHR") {
		t.Errorf("SIN's state: %q", got)
	}
	if note := FailoverNote(w); !strings.Contains(note, "LHR's replicas run in SIN") {
		t.Errorf("note: %q", note)
	}
	w.Status.Conditions[0].Status = metav1.ConditionFalse
	if note := FailoverNote(w); note != "" {
		t.Errorf("no failover, no note: %q", note)
	}
}
