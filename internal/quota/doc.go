// Package quota is the cell side of compute's quota: it claims quota for
// each Instance in its project's quota plane and tells the InstanceReconciler
// what the answer means for the Instance's QuotaGranted condition.
//
// Pure parts: SizeOf (the one sizing rule, internal/quota/sizing, which the
// Kubernetes provider's Pods, admission and the CLI's quota view share) and
// BuildClaim (the claim an Instance needs: instances 1 plus vCPU in
// millicores and memory in MiB, the sum of its containers' sizes: each
// one's limit, else its request, else a share of the instance's runtime
// requests or instance type), TargetFromNamespace
// (project and claim namespace from the cell namespace's federation
// labels), Condition and Reason (claim state or API error → QuotaGranted
// reason) and RequeueAfter (the age-anchored requeue schedule).
//
// Client is the Evaluator the InstanceReconciler calls. It reaches a
// project's quota plane through Planes: MiloPlanes (Milo's URL scheme
// <host>/apis/resourcemanager.miloapis.com/v1alpha1/projects/<project>/control-plane)
// or StaticPlanes (a kubeconfig, for the local platform). LoadPlanes builds
// either from the quota kubeconfig; a configured but missing file is an
// error, which must stop the manager at start.
//
// # How the InstanceReconciler uses it
//
// *Client satisfies the reconciler's QuotaClient seam (Evaluate, Release)
// as it is.
//
// Wiring. With a quota kubeconfig: planes := LoadPlanesWithLimits(path, milo,
// the cell's QPS and burst) (error ⇒
// exit 1); client := NewClient(Options{SourceCluster: <cell name>, Reader:
// mgr.GetAPIReader(), Planes: planes}); optionally add client.WatchSources(mgr)
// with builder.WatchesRawSource. Without one: SetEnforcementEnabled(false),
// log at error level that quota is disabled, and use a nil Evaluator
// (QuotaGranted=True, reason QuotaDisabled, no finalizer).
//
// Live Instance, every reconcile:
//
//  1. Make sure the Instance carries the compute finalizer before the first
//     claim is made (return after adding it).
//  2. cond, err := Evaluate(ctx, inst); set cond.ObservedGeneration =
//     inst.Generation.
//  3. Write QuotaGranted (status patched only when it changed) before
//     looking at err: the reason must be visible whatever happens next. A
//     young Instance's grant, or its claim still pending, may be held back
//     (the InstanceReconciler's InitialReportGrace): the grant is then
//     written with Ready once the provider reports.
//  4. If cond.Status is True, remove the Quota scheduling gate in this same
//     reconcile, guarded by cond.ObservedGeneration == inst.Generation and
//     by the resourceVersion the condition was evaluated for (no second
//     event is needed). Otherwise keep the gate: quota fails closed.
//  5. Emit a Warning event with cond.Reason when the reason changes to a
//     refusal or failure (QuotaExceeded, ValidationFailed, QuotaNoBudget and
//     the failure reasons; see IsFailure). Evaluate already counts failures
//     in compute_quota_eval_failures_total; do not count them again.
//  6. While cond.Status is not True, return RequeueAfter:
//     RequeueAfter(age of the Instance), also when err != nil (log err; do
//     not return it, so a broken backend is polled on the schedule rather
//     than in error backoff) and also when a write conflicts: a conflict
//     while quota is pending requeues at that interval. Conflicts never
//     produce events.
//
// Instance being deleted (finalizer present):
//
//  1. err := Release(ctx, inst).
//  2. errors.Is(err, ErrClaimOrphaned): the project cannot be resolved. Log
//     at error level, emit a Warning event QuotaClaimOrphaned, and remove the
//     finalizer anyway (Release already counted
//     compute_quota_claim_orphaned_total). Deletion never wedges.
//  3. Any other error: return it (retry with backoff); the finalizer stays
//     until the claim is deleted.
//  4. nil: remove the finalizer. Release does not wait for the quota service
//     to release the allocation.
//
// Claims are named instance-<instance name> in the project namespace of
// the Instance's workload (see ClaimName for why names cannot collide
// across cells); a claim another cell made under the same name is never
// adopted or deleted (QuotaMisconfigured), and one an earlier Instance of the
// same name left behind is replaced.
package quota
