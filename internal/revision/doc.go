// Package revision keeps the server-side template history of a Workload, the
// record `datumctl compute rollout history` lists and `rollout undo` restores
// from. The WorkloadReconciler records a revision whenever the template
// changes — whichever client changed it (kubectl, the CLI, GitOps) — and a
// change of the compute.datumapis.com/restartedAt annotation is a change.
//
// # Format
//
// Each revision is an apps/v1 ControllerRevision in the Workload's namespace:
//
//	apiVersion: apps/v1
//	kind: ControllerRevision
//	metadata:
//	  name: <workload>-<template hash>        # "-<n>" appended on a hash collision
//	  namespace: <workload namespace>
//	  labels:
//	    compute.datumapis.com/workload-uid: <workload uid>
//	    compute.datumapis.com/workload-name: <workload name>
//	    controller-revision-hash: <template hash>
//	  annotations:
//	    kubernetes.io/change-cause: <copied from the Workload, when set>
//	    compute.datumapis.com/template-changed-by: <user whose request made the change, when known>
//	    compute.datumapis.com/recorded-at: <RFC 3339 time the revision became current>
//	  ownerReferences: [the Workload, controller: true]
//	revision: <N>                              # 1, 2, 3, ... ; the highest is current
//	data:
//	  spec:
//	    template: <the Workload's spec.template, exactly>
//
// The template hash is names.TemplateHash of the template (64 bits of
// SHA-256): the hash the WorkloadDeployments and Instances carry. A
// revision recorded by a release before SHA-256 keeps its label in the
// earlier, 32-bit spelling; it still matches its template (Compute,
// TemplateOf and Spellings decode the template and accept either spelling),
// so an upgrade records no new revision and renumbers none. Find a Workload's revisions with
// the workload-uid label (never by name) and order them by .revision. The
// Workload reports the current one in status.currentRevision and
// status.currentTemplateHash.
//
// Returning to an earlier template (an undo, or a manual revert) does not
// create a duplicate: the matching revision is renumbered to the next number
// and becomes current, as Deployments and StatefulSets do. To undo, replace
// the Workload's spec.template with Template(revision) — a JSON patch
// `replace /spec/template`, not a merge patch, which would keep labels and
// annotations the old template did not have.
//
// spec.revisionHistoryLimit (default 10) old revisions are kept besides the
// current one; older ones are deleted, oldest first.
package revision
