package cellhealth

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReachableMetric is 1 while compute hears from every cell of a city and 0
// while it does not (the Tracker's verdict, which the city's conditions
// report as stale), by city code. Part of compute's operational contract.
const ReachableMetric = "compute_city_reachable"

var (
	reachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ReachableMetric,
		Help: "Whether compute hears from every cell of the city (1) or not (0): the heartbeat Lease is renewed and Karmada reports the cluster Ready.",
	}, []string{"city"})
	registerOnce sync.Once
)

// registerMetrics registers the tracker's metrics on controller-runtime's
// registry, once: binaries without the management role expose none.
func registerMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(reachable) })
}

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
