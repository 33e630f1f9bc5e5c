// Package projector is the InstanceProjector of the management plane: it
// keeps, in each project namespace, a read-only projection of every
// Instance that runs for it in a cell.
//
// Cells write a copy of each of their Instances back into the federation
// plane (internal/controller/writeback), in the hub namespace of its
// WorkloadDeployment. The projector watches those hub Instances. For each
// it resolves where the projection goes — the project cluster and namespace
// from the hub namespace's upstream labels, the owning project
// WorkloadDeployment by name from the Instance's
// compute.datumapis.com/workload-deployment-name label — and creates or
// updates the projection: same name, the hub Instance's labels and
// annotations plus compute.datumapis.com/projection=true, its spec and its
// status, owned (ownerReference) by the project WorkloadDeployment.
//
// Rules:
//
//   - a projection is never created without its owner: when the project
//     WorkloadDeployment does not exist yet, the request is requeued
//     shortly (RequeueAfter), never made ownerless;
//   - projections follow the real Instance: the write-back records the cell
//     Instance's UID and creation time (compute.datumapis.com/source-uid,
//     source-created); when the cell recreates an Instance its write-back is
//     replaced and, seeing another source UID, so is the projection — the
//     project shows a new Instance with a fresh age, not the old one updated;
//   - the projector deletes only ghosts: the projection of a hub Instance
//     that is gone (a cell scaled down), after a live read of the hub
//     confirms it, and only while the owning project WorkloadDeployment
//     exists and federates to that hub namespace. A partitioned cell
//     deletes nothing in the hub, so nothing is deleted in the project
//     because a city went quiet; everything else goes with its owner,
//     through the project plane's garbage collector;
//   - a hub Instance whose identity cannot be resolved (labels missing, a
//     project cluster that is not engaged, a name taken by an Instance that
//     is not a projection) is reported with an event on the hub Instance and
//     the compute_projection_unresolvable_total metric, and not retried hot:
//     its next change brings it back;
//   - writes go through the manager's own client in each project plane:
//     the identity the admission webhook lets write projections.
package projector
