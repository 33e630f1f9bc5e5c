package quota

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricValue reads a gauge or counter from controller-runtime's registry;
// reason selects the series of a labelled metric.
func metricValue(t *testing.T, name, reason string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := reason == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					match = true
				}
			}
			if !match {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func TestMetricsAreServedByControllerRuntime(t *testing.T) {
	SetEnforcementEnabled(false)
	if got, _ := metricValue(t, EnforcementEnabledMetric, ""); got != 0 {
		t.Errorf("%s = %v after disabling, want 0", EnforcementEnabledMetric, got)
	}
	SetEnforcementEnabled(true)
	if got, _ := metricValue(t, EnforcementEnabledMetric, ""); got != 1 {
		t.Errorf("%s = %v after enabling, want 1", EnforcementEnabledMetric, got)
	}
	before, _ := metricValue(t, EvalFailuresMetric, "QuotaBackendUnavailable")
	countFailure("QuotaBackendUnavailable")
	if got, ok := metricValue(t, EvalFailuresMetric, "QuotaBackendUnavailable"); !ok || got != before+1 {
		t.Errorf("%s{reason=QuotaBackendUnavailable} = %v, want %v", EvalFailuresMetric, got, before+1)
	}
	countOrphan()
	if got, ok := metricValue(t, ClaimOrphanedMetric, ""); !ok || got < 1 {
		t.Errorf("%s = %v, want at least 1", ClaimOrphanedMetric, got)
	}
}
