// Package workloadstatus decides the status of a Workload — each city's
// state, the placements' and the Workload's conditions — from what one
// reconcile observed. It is the one place a city's state is worked out: the
// WorkloadReconciler writes what Compute returns, and the CLI's views read
// that status (status.placements[].cities and status.rollout) instead of
// deriving cities from WorkloadDeployments again.
//
// Compute is pure and deterministic: the same observations give the same
// status, condition transition times aside (kept from the current status
// when a condition did not change).
package workloadstatus
