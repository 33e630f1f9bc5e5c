package quota

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names, part of compute's operational contract.
const (
	// EnforcementEnabledMetric is 1 when a quota backend is configured and 0
	// when Instances are admitted without quota.
	EnforcementEnabledMetric = "compute_quota_enforcement_enabled"
	// EvalFailuresMetric counts quota evaluations that could not ask the
	// backend, by QuotaGranted reason.
	EvalFailuresMetric = "compute_quota_eval_failures_total"
	// ClaimOrphanedMetric counts Instances deleted without releasing their
	// claim because their project could not be resolved.
	ClaimOrphanedMetric = "compute_quota_claim_orphaned_total"
)

var (
	enforcementEnabled = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: EnforcementEnabledMetric,
		Help: "Whether quota enforcement is active in this cell (1) or disabled because no quota backend is configured (0).",
	})
	evalFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: EvalFailuresMetric,
		Help: "Quota evaluations that could not get an answer from the quota backend, by QuotaGranted reason.",
	}, []string{"reason"})
	claimOrphaned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: ClaimOrphanedMetric,
		Help: "Instances released without deleting their ResourceClaim because their project could not be resolved.",
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics on controller-runtime's registry,
// once, on first use: binaries that never touch quota expose none of them.
func registerMetrics() {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(enforcementEnabled, evalFailures, claimOrphaned)
	})
}

// SetEnforcementEnabled records whether quota is enforced. Call it once at
// start-up with false when no quota backend is configured; NewClient sets it
// to true.
func SetEnforcementEnabled(enabled bool) {
	registerMetrics()
	v := 0.0
	if enabled {
		v = 1
	}
	enforcementEnabled.Set(v)
}

// countFailure counts a failed evaluation under its reason.
func countFailure(reason string) {
	registerMetrics()
	evalFailures.WithLabelValues(reason).Inc()
}

// countOrphan counts a claim left behind.
func countOrphan() {
	registerMetrics()
	claimOrphaned.Inc()
}
