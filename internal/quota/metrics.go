package quota

import "github.com/citycells/compute/internal/lazymetrics"

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
	enforcementEnabled = lazymetrics.Gauge(EnforcementEnabledMetric,
		"Whether quota enforcement is active in this cell (1) or disabled because no quota backend is configured (0).")
	evalFailures = lazymetrics.CounterVec(EvalFailuresMetric,
		"Quota evaluations that could not get an answer from the quota backend, by QuotaGranted reason.",
		"reason")
	claimOrphaned = lazymetrics.Counter(ClaimOrphanedMetric,
		"Instances released without deleting their ResourceClaim because their project could not be resolved.")
)

// registerMetrics registers the metrics on controller-runtime's registry,
// once, on first use: binaries that never touch quota expose none of them.
var registerMetrics = lazymetrics.NewSet(nil, enforcementEnabled, evalFailures, claimOrphaned).Register

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
