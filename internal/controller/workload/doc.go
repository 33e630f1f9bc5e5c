// Package workload is the WorkloadReconciler of the management plane. It
// runs on a multicluster manager: every request carries the name of the
// project cluster it came from, and a request without one is dropped — it
// would otherwise be served against the host cluster.
//
// For each Workload it:
//
//  1. reads the cities bound to the namespace (LocationBindings and their
//     Locations), the WorkloadDeployments of the namespace and the
//     Workload's template revisions;
//  2. records the template as a revision (internal/revision) and trims the
//     history to spec.revisionHistoryLimit;
//  3. expands the placements into one WorkloadDeployment per placement ×
//     bound, ready city (internal/placement), creates the missing ones,
//     merge-patches the changed ones and deletes those no longer wanted —
//     never touching a WorkloadDeployment of another Workload;
//  4. aggregates the WorkloadDeployments' status into per-city, per-placement
//     and Workload status, sorted, and patches it only when it changed.
//
// WorkloadDeployments and revisions carry the Workload as controller owner
// reference: deleting the Workload lets the garbage collector delete them.
// Cities that get no WorkloadDeployment are reported in the placement's
// city list with the reason (LocationNotBound, LocationNotReady,
// DeploymentConflict); watching LocationBindings and Locations makes a city
// bound later get its WorkloadDeployment.
package workload
