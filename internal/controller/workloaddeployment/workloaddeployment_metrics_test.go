package workloaddeployment

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestObserveToCellLagOncePerTemplate(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 10, 0, time.UTC)
	applied := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		computev1alpha.RevisionAppliedAtAnnotation: "2026-11-27T08:00:07Z",
	}}}
	before := toCellSamples(t)
	observeToCellLag(applied, "", "aaa", now)                                 // the first template: 3s
	observeToCellLag(applied, "aaa", "aaa", now)                              // a status write for the same template
	observeToCellLag(applied, "aaa", "", now)                                 // no template assessed
	observeToCellLag(&computev1alpha.WorkloadDeployment{}, "aaa", "bbb", now) // the hub recorded no time
	got := toCellSamples(t)
	if got.GetSampleCount()-before.GetSampleCount() != 1 || got.GetSampleSum()-before.GetSampleSum() != 3 {
		t.Errorf("%s observed %d samples summing %vs, want 1 of 3s", ToCellLagMetric,
			got.GetSampleCount()-before.GetSampleCount(), got.GetSampleSum()-before.GetSampleSum())
	}
}

func toCellSamples(t *testing.T) *dto.Histogram {
	t.Helper()
	m := &dto.Metric{}
	if err := toCellLag.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
