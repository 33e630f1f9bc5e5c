package cellhealth

import "github.com/citycells/compute/internal/lazymetrics"

// ReachableMetric is 1 while compute hears from every cell of a city and 0
// while it does not (the Tracker's verdict, which the city's conditions
// report as stale), by city code. Part of compute's operational contract.
const ReachableMetric = "compute_city_reachable"

var reachable = lazymetrics.GaugeVec(ReachableMetric,
	"Whether compute hears from every cell of the city (1) or not (0): the heartbeat Lease is renewed and Karmada reports the cluster Ready.",
	"city")

// registerMetrics registers the tracker's metrics on controller-runtime's
// registry, once: binaries without the management role expose none.
var registerMetrics = lazymetrics.NewSet(nil, reachable).Register

// setReachable exports city's verdict.
func setReachable(city string, h Health) {
	registerMetrics()
	v := 1.0
	if h.Unreachable {
		v = 0
	}
	reachable.WithLabelValues(city).Set(v)
}

// forgetCity removes city's series once it has no cells.
func forgetCity(city string) {
	registerMetrics()
	reachable.DeleteLabelValues(city)
}
