// Package workloaddeployment holds the cell-role WorkloadDeploymentReconciler:
// it keeps one Instance per desired replica of a WorkloadDeployment, named
// `<wd>-<ordinal>` with the ordinal in the instance-index label, stamped with
// every linking label and held by the Quota (and, with the
// NetworkingIntegration feature gate, Network) scheduling gate until the
// InstanceReconciler releases it.
//
// The decisions (which ordinal to create, which Instance to delete, which
// labels to back-fill) come from the pure planner in internal/instanceplan; this
// package applies them and reports what it observes in the
// WorkloadDeployment's status.
//
// The status is computed from what the cache shows on every reconcile, but
// written only when it changed, and not always at once: every write of a
// cell deployment's status is copied on the hub (Karmada's Work and
// ResourceBinding status, the hub copy's, their events), and a deployment
// coming up changes several times on the way (its Instances appear, wait
// for quota, are released, provisioned, become ready). A change that only
// reports that progress is held back for StatusInterval from the first
// such change and written then with everything that came after it (the
// reconcile asks to be woken when the interval is up; a change undone
// meanwhile is never written). A newly observed generation, the desired
// state reached or left, availability lost and a failure appearing,
// changing or clearing are written at once (see urgent).
//
// Every reconcile reads all of a deployment's Instances, so the Instance
// events that bring it back are coalesced in a window that grows with the
// deployment (20 µs per Instance, at most 20 ms): the thousands of events
// of a thousand Instances coming up make tens of reconciles a second, not
// one per event, while a deployment of a few Instances is brought back at
// once.
package workloaddeployment
