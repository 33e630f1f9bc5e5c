package podevents

import "github.com/citycells/compute/internal/lazymetrics"

// ForwardedMetric counts the forwarder's hub event writes by result.
const ForwardedMetric = "compute_pod_events_forwarded_total"

var forwarded = lazymetrics.CounterVec(ForwardedMetric,
	"Events of the cell's Instances' Pods carried to the federation plane, by result (written, unchanged, limited: held back by the write rate, failed).",
	"result")

// registerMetrics registers the metrics on controller-runtime's registry,
// once.
var registerMetrics = lazymetrics.NewSet(nil, forwarded).Register
