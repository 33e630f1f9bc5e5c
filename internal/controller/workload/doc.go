// Package workload is the WorkloadReconciler of the management plane. It
// runs on a multicluster manager: every request carries the name of the
// project cluster it came from, and a request without one is dropped — it
// would otherwise be served against the host cluster.
//
// Each reconcile has the shape of Cluster API's MachineSet reconcile (and
// Kueue's read-then-reconcile): read everything once, run phases whose
// outputs are values the next phase reads, write, write the status once,
// then record what happened.
//
//  1. observe reads into a scope the Workload (its deprecated cityCodes
//     rewritten into a locationSelector in memory, as admission does; the
//     spec is never written), the cities bound to the namespace
//     (LocationBindings and their Locations), the WorkloadDeployments of
//     the namespace, the Workload's template revisions, its InstanceType,
//     and the time of the reconcile, read once: no phase reads the clock.
//     An input that cannot be read turns Available and Progressing
//     Unknown (ObservationFailed).
//  2. plan runs the phases on the scope: revisions (the template as the
//     current revision, internal/revision), targets (the placements ×
//     Locations, placement.Targets), failover (which unreachable
//     Locations run in a fallback, internal/failover, under the platform's
//     failover rate), rollout (which revision each city may run, on the
//     cities as observed, internal/cityrollout) and expand (each target's
//     WorkloadDeployment built once, with its city's revision and, on a
//     fallback's, the failover's bookkeeping, placement.Expand).
//  3. apply writes the plan: the revision and the history's trim while
//     the deployments are created, merge-patched and deleted (never a
//     WorkloadDeployment of another Workload), then the status, computed
//     from what the writes left (internal/workloadstatus) and patched only
//     when it changed.
//  4. record emits the rollout's and the failover's events and exports the
//     rollout metrics from the outcome, in one place.
//
// WorkloadDeployments and revisions carry the Workload as controller owner
// reference: deleting the Workload lets the garbage collector delete them.
// Cities that get no WorkloadDeployment are reported in the placement's
// city list with the reason (LocationNotBound, LocationNotReady,
// DeploymentConflict); watching LocationBindings and Locations makes a city
// bound later get its WorkloadDeployment.
package workload
