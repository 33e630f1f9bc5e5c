package writeback

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObserveLagOnlyForNewerTransitions(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
	before := lagSamples(t)
	observeLag(at(10*time.Second), at(2*time.Second), now)
	observeLag(at(2*time.Second), at(2*time.Second), now) // same transition: only a message or a count changed
	observeLag(at(2*time.Second), at(5*time.Second), now) // an older transition is no news
	if got := lagSamples(t); got.count-before.count != 1 || got.sum-before.sum != 2 {
		t.Errorf("%s observed %d writes summing %vs, want 1 of 2s (only the newer transition)",
			LagMetric, got.count-before.count, got.sum-before.sum)
	}
}

type samples struct {
	count uint64
	sum   float64
}

func lagSamples(t *testing.T) samples {
	t.Helper()
	m := &dto.Metric{}
	if err := lag.Write(m); err != nil {
		t.Fatal(err)
	}
	return samples{count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum()}
}
