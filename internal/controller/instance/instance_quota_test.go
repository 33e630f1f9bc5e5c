package instance

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestCountRefusalCountsEachNewRefusal(t *testing.T) {
	granted := &metav1.Condition{Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonQuotaAvailable}
	pending := metav1.Condition{Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonPendingEvaluation}
	exceeded := metav1.Condition{Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonQuotaExceeded}
	noBudget := metav1.Condition{Status: metav1.ConditionUnknown, Reason: computev1alpha.ReasonQuotaNoBudget}
	tests := map[string]struct {
		previous   *metav1.Condition
		quota      metav1.Condition
		wantCounts map[string]float64
	}{
		"a first refusal counts":                   {previous: nil, quota: exceeded, wantCounts: map[string]float64{computev1alpha.ReasonQuotaExceeded: 1}},
		"a grant that turns into a refusal counts": {previous: granted, quota: exceeded, wantCounts: map[string]float64{computev1alpha.ReasonQuotaExceeded: 1}},
		"no budget is a refusal":                   {previous: &pending, quota: noBudget, wantCounts: map[string]float64{computev1alpha.ReasonQuotaNoBudget: 1}},
		"a refusal that stays is counted once":     {previous: &exceeded, quota: exceeded, wantCounts: map[string]float64{computev1alpha.ReasonQuotaExceeded: 0}},
		"a refusal for a new reason counts":        {previous: &noBudget, quota: exceeded, wantCounts: map[string]float64{computev1alpha.ReasonQuotaExceeded: 1}},
		"a pending evaluation is not a refusal":    {previous: nil, quota: pending, wantCounts: map[string]float64{computev1alpha.ReasonPendingEvaluation: 0}},
		"a grant is not a refusal":                 {previous: &exceeded, quota: *granted, wantCounts: map[string]float64{computev1alpha.ReasonQuotaAvailable: 0}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := map[string]float64{}
			for reason := range tc.wantCounts {
				before[reason] = testutil.ToFloat64(quotaRefusals.WithLabelValues(reason))
			}
			countRefusal(tc.previous, tc.quota)
			for reason, want := range tc.wantCounts {
				if got := testutil.ToFloat64(quotaRefusals.WithLabelValues(reason)) - before[reason]; got != want {
					t.Errorf("%s{reason=%s} grew by %v, want %v", QuotaRefusalsMetric, reason, got, want)
				}
			}
		})
	}
}
