package workloaddeployment

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// HubToCellLagMetric observes, for each template a cell's
// WorkloadDeployment gets, the seconds from the management role applying
// it in the federation plane (the revision-applied-at annotation, RFC 3339,
// so to the second) to the cell's controller first writing a status for
// it (status.templateHash changes): the hub → cell leg, Karmada's
// propagation included. Part of compute's operational contract.
const HubToCellLagMetric = "compute_hub_to_cell_lag_seconds"

var (
	hubToCellLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    HubToCellLagMetric,
		Help:    "Seconds from a template being applied to a city's WorkloadDeployment in the federation plane to the cell's controller acting on it (1 s resolution).",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
	})
	registerOnce sync.Once
)

// registerMetrics registers the controller's metrics on controller-runtime's
// registry, once: binaries without the cell role expose none of them.
func registerMetrics() {
	registerOnce.Do(func() { metrics.Registry.MustRegister(hubToCellLag) })
}

// observeHubToCellLag observes the lag of a status write that took the
// deployment from template hash previous to written, when the template
// changed and the hub recorded when it applied it.
func observeHubToCellLag(wd *computev1alpha.WorkloadDeployment, previous, written string, now time.Time) {
	if written == "" || written == previous {
		return
	}
	at, err := time.Parse(time.RFC3339, wd.Annotations[computev1alpha.RevisionAppliedAtAnnotation])
	if err != nil {
		return
	}
	hubToCellLag.Observe(max(now.Sub(at), 0).Seconds())
}
