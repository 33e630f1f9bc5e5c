// Package workloaddeployment holds the cell-role WorkloadDeploymentReconciler:
// it keeps one Instance per desired replica of a WorkloadDeployment, named
// `<wd>-<ordinal>` with the ordinal in the instance-index label, stamped with
// every linking label and held by the Quota (and, with the
// NetworkingIntegration feature gate, Network) scheduling gate until the
// InstanceReconciler releases it.
//
// The decisions (which ordinal to create, which Instance to delete, which
// labels to back-fill) come from the pure planner in internal/rollout; this
// package applies them and reports what it observes in the
// WorkloadDeployment's status.
package workloaddeployment
