package writeback

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/citycells/compute/internal/lazymetrics"
)

// LagMetric observes, for each status write to a hub copy that brings a
// newer condition transition, the seconds from that transition in the cell
// (the latest lastTransitionTime of the cell Instance's conditions) to the
// write landing in the federation plane: the cell → hub leg of an
// Instance's status on its way to the project (compute_projection_lag_seconds
// is the whole way). Part of compute's operational contract.
const LagMetric = "compute_writeback_lag_seconds"

var lag = lazymetrics.Histogram(LagMetric,
	"Seconds from an Instance condition changing in its cell to the write-back writing it to the federation plane.",
	[]float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300})

// registerMetrics registers the write-back's metrics on controller-runtime's
// registry, once: binaries without the cell role expose none of them.
var registerMetrics = lazymetrics.NewSet(nil, lag).Register

// observeLag observes the lag of a status write that replaced previous
// with written, when written carries a newer transition.
func observeLag(previous, written []metav1.Condition, now time.Time) {
	newest := latestTransition(written)
	if !newest.After(latestTransition(previous)) {
		return
	}
	lag.Observe(max(now.Sub(newest), 0).Seconds())
}

// latestTransition returns the latest transition time of conds.
func latestTransition(conds []metav1.Condition) time.Time {
	var t time.Time
	for _, c := range conds {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	return t
}
