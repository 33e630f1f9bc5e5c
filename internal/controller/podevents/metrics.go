package podevents

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ForwardedMetric counts the forwarder's hub event writes by result.
const ForwardedMetric = "compute_pod_events_forwarded_total"

var (
	forwarded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ForwardedMetric,
		Help: "Events of the cell's Instances' Pods carried to the federation plane, by result (written, unchanged, limited: held back by the write rate, failed).",
	}, []string{"result"})

	registerOnce sync.Once
)

// registerMetrics registers the metrics on controller-runtime's registry,
// once.
func registerMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(forwarded) })
}
