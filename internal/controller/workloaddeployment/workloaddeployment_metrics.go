package workloaddeployment

import (
	"time"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/lazymetrics"
)

// ToCellLagMetric observes, for each template a cell's WorkloadDeployment
// gets, the seconds from the management role applying it (the Workload
// controller's revision-applied-at annotation, RFC 3339, so to the second,
// which the federator copies to the hub and Karmada to the cell) to the
// cell's controller first writing a status for it (status.templateHash
// changes): the whole way of a change, management → hub → cell. Part of
// compute's operational contract.
const ToCellLagMetric = "compute_management_to_cell_lag_seconds"

var toCellLag = lazymetrics.Histogram(ToCellLagMetric,
	"Seconds from the management role applying a template to a city's WorkloadDeployment to the cell's controller acting on it (1 s resolution).",
	[]float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600})

// registerMetrics registers the controller's metrics on controller-runtime's
// registry, once: binaries without the cell role expose none of them.
var registerMetrics = lazymetrics.NewSet(nil, toCellLag).Register

// observeToCellLag observes the lag of a status write that took the
// deployment from template hash previous to written, when the template
// changed and the hub recorded when it applied it.
func observeToCellLag(wd *computev1alpha.WorkloadDeployment, previous, written string, now time.Time) {
	if written == "" || written == previous {
		return
	}
	at, err := time.Parse(time.RFC3339, wd.Annotations[computev1alpha.RevisionAppliedAtAnnotation])
	if err != nil {
		return
	}
	toCellLag.Observe(max(now.Sub(at), 0).Seconds())
}
