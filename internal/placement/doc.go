// Package placement expands a Workload into the WorkloadDeployments it wants
// and plans how to get there from the WorkloadDeployments that exist. It is
// pure: the WorkloadReconciler reads the world, calls Expand and Diff, and
// applies the Plan.
//
// Expansion: every placement × city code of the Workload is a Target. A
// city bound to the project and ready gets a desired WorkloadDeployment
// named names.WorkloadDeploymentName(workload, uid, placement, city): at
// most 63 characters, readable, and unique per (workload UID, placement,
// city). A city that is not bound gets none and carries the reason
// (LocationNotBound). A city that is bound but whose Location is not ready
// gets no new WorkloadDeployment (LocationNotReady); one that already exists
// is kept and updated, so a readiness blip never deletes running instances.
//
// Planning: a WorkloadDeployment belongs to a Workload when its controller
// owner reference carries the Workload's UID (or, with no controller at all,
// its spec.workloadRef.uid does). One that holds a desired name but belongs
// to another Workload is a conflict: it is never adopted, updated or
// deleted. Existing deployments are updated by merge: the fields the
// Workload owns (workloadRef, placementName, cityCode, template,
// scaleSettings, rolloutStrategy) are replaced, spec.replicas (the scale
// subresource) is kept, labels and annotations other writers set are kept.
// Deployments that belong to the Workload and are no longer wanted are
// deleted.
package placement
