// Package writeback is the cell role's Instance write-back: it keeps, in the
// federation plane (the hub), a copy of every Instance of the cell, which
// the management plane's InstanceProjector turns into the project's
// read-only projections.
//
// A cell's WorkloadDeployments arrive from the hub through Karmada, which
// propagates namespaces by name: a cell Instance's namespace is the hub
// namespace of its WorkloadDeployment. The copy lives there, under the same
// name, with the Instance's spec, status, labels (all the linking labels of
// the API: workload, deployment, instance index, city, placement) and
// annotations. It is written:
//
//   - only while the hub WorkloadDeployment exists (and is not being
//     deleted), and owned by it (ownerReference), so the hub's garbage
//     collector reclaims every copy with it even when the cell never comes
//     back;
//   - only when something changed: metadata and spec by one patch, status
//     by another, each skipped when equal;
//   - with labels and annotations merged over what the copy has, so keys
//     others add in the hub are kept;
//   - never from a hub cache that has not caught up with the write-back's
//     own latest write to the copy (internal/ownwrites): that write's event
//     brings the Instance back, so a copy just created is not created again
//     (AlreadyExists) nor patched from the version before the write.
//
// When the cell Instance is gone, the copy is deleted — after a live read
// confirms it is gone, and only if the cell runs the copy's
// WorkloadDeployment (every cell sees every hub Instance; a copy belongs to
// the one cell that runs its deployment, whose name is unique per city).
// The write-back holds no finalizer on cell Instances: a cell keeps
// creating, rolling and deleting Instances while the hub is unreachable,
// and catches up when it returns.
package writeback
