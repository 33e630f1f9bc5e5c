package lazymetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestRegisterRegistersOnceAndZeroesOnce(t *testing.T) {
	c := CounterVec("compute_lazymetrics_test_total", "A test counter, by reason.", "reason")
	zeroed := 0
	s := NewSet(func() {
		zeroed++
		c.WithLabelValues("a")
	}, c)
	s.Register()
	s.Register() // a second MustRegister would panic
	if zeroed != 1 {
		t.Errorf("zero ran %d times, want 1", zeroed)
	}
	if n, err := testutil.GatherAndCount(metrics.Registry, "compute_lazymetrics_test_total"); err != nil || n != 1 {
		t.Errorf("GatherAndCount = %d, %v; want 1 series", n, err)
	}
}
