// Package lazymetrics declares compute's Prometheus metrics and registers
// them on controller-runtime's registry on first use, so that a binary that
// never runs the code exporting them exposes none of them.
package lazymetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Set is collectors registered together, once.
type Set struct {
	once       sync.Once
	collectors []prometheus.Collector
	zero       func()
}

// NewSet returns the set of collectors. zero, when not nil, runs right after
// they are registered: it creates the series that exist from the start, at
// zero.
func NewSet(zero func(), collectors ...prometheus.Collector) *Set {
	return &Set{collectors: collectors, zero: zero}
}

// Register registers the set on controller-runtime's registry the first
// time it is called, and does nothing after.
func (s *Set) Register() {
	s.once.Do(func() {
		metrics.Registry.MustRegister(s.collectors...)
		if s.zero != nil {
			s.zero()
		}
	})
}

// Counter returns a counter named name.
func Counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// CounterVec returns a counter named name, by labels.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Gauge returns a gauge named name.
func Gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// GaugeVec returns a gauge named name, by labels.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// Histogram returns a histogram named name with buckets.
func Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// HistogramVec returns a histogram named name with buckets, by labels.
func HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
