package projector

import "github.com/citycells/compute/internal/lazymetrics"

// Metric names, part of compute's operational contract.
const (
	// UnresolvableMetric counts hub Instances that could not be projected,
	// by reason.
	UnresolvableMetric = "compute_projection_unresolvable_total"
	// LagMetric observes, for each projection status change, the time from
	// the latest condition transition of the Instance in its cell to the
	// projection showing it.
	LagMetric = "compute_projection_lag_seconds"
)

var (
	unresolvable = lazymetrics.CounterVec(UnresolvableMetric,
		"Instances written back to the federation plane that could not be projected into their project, by reason.",
		"reason")
	lag = lazymetrics.Histogram(LagMetric,
		"Seconds from an Instance condition changing in its cell to its projection showing the change.",
		[]float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})
)

// registerMetrics registers the metrics on controller-runtime's registry,
// once: binaries that never project expose none of them.
var registerMetrics = lazymetrics.NewSet(nil, unresolvable, lag, eventsProjected, eventsRefused).Register

// Event projection metrics, part of compute's operational contract.
const (
	// EventsProjectedMetric counts the event projector's project writes by
	// result.
	EventsProjectedMetric = "compute_instance_events_projected_total"
	// EventsRefusedMetric counts hub events the event projector refused to
	// carry, by reason.
	EventsRefusedMetric = "compute_instance_events_refused_total"
)

// ReasonCityMismatch is the reason a hub event is refused when its city is
// not its Instance's (a cell wrote about another city's Instance), and a
// hub Instance is not projected when its city is not its
// WorkloadDeployment's (a cell wrote back an Instance of another city's
// deployment).
const ReasonCityMismatch = "CityMismatch"

var (
	eventsProjected = lazymetrics.CounterVec(EventsProjectedMetric,
		"Events of Instances carried from the federation plane to their projects, by result (written, unchanged, limited: held back by the write rate, failed).",
		"result")
	eventsRefused = lazymetrics.CounterVec(EventsRefusedMetric,
		"Events of the federation plane not carried to a project, by reason (CityMismatch: the event's city is not its Instance's).",
		"reason")
)
