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
//  3. lists the placements × cities (placement.Targets) and plans the
//     rollout across cities on them as observed (internal/cityrollout):
//     which revision each city may run;
//  4. builds each city's WorkloadDeployment once, with the template of that
//     revision (placement.Expand with the plan's revisionOf), creates the
//     missing ones, merge-patches the changed ones and deletes those no
//     longer wanted — never touching a WorkloadDeployment of another
//     Workload;
//  5. computes the status from what the writes left (internal/workloadstatus:
//     each city's state, wave and rollout state, the placements' and the
//     Workload's conditions, Progressing with one setter) and patches it
//     only when it changed. An input that cannot be read turns Available
//     and Progressing Unknown (ObservationFailed).
//
// WorkloadDeployments and revisions carry the Workload as controller owner
// reference: deleting the Workload lets the garbage collector delete them.
// Cities that get no WorkloadDeployment are reported in the placement's
// city list with the reason (LocationNotBound, LocationNotReady,
// DeploymentConflict); watching LocationBindings and Locations makes a city
// bound later get its WorkloadDeployment.
package workload
