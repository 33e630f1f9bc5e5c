// Package quotaservice is compute's quota service: the part Milo plays in
// production, for the local platform and tests. It runs as a
// controller-runtime manager against one project's quota plane and
//
//   - creates the ResourceRegistrations of compute's resource types
//     (instances, vCPU in millicores, memory in MiB) and the project's
//     default ResourceGrant when they are missing, never changing them
//     afterwards;
//   - evaluates every ResourceClaim against the consumer's ResourceGrants,
//     atomically per claim (all requests or none), first come first served,
//     and answers on the claim's Granted condition: QuotaAvailable,
//     QuotaExceeded ("requested 1 compute.datumapis.com/instances, 0 of 10
//     available"), ValidationFailed, or PendingEvaluation when no grant
//     gives the consumer a requested resource type;
//   - refuses a cell's claim (one labelled compute.datumapis.com/source-cluster,
//     which the quota plane's isolation policy holds to the cell's own name)
//     when no LocationBinding of the claim's namespace binds the city the
//     cell serves, or when the cell already has MaxClaimsPerSource claims
//     outstanding: ValidationFailed saying why, a Warning event and
//     compute_quota_claims_refused_total (see sources.go);
//   - keeps one AllowanceBucket per consumer × resource type (limit,
//     allocated, available, claimCount, grantCount);
//   - releases a claim's allocation when it sees the claim deleted or gone
//     (a grant is one status write: the service puts no finalizer on
//     claims, and removes the one earlier versions put on granted claims,
//     after releasing, when such a claim is deleted);
//   - re-evaluates pending and denied claims whenever a claim, grant,
//     bucket or registration of their consumer changes, so raising a grant
//     or deleting a claim admits the next claims in line;
//   - reports Active on grants and registrations.
//
// # Why concurrent claims never over-grant
//
// Invariant: for every consumer and resource type, the claims whose status
// durably says Granted and that are not being deleted never ask for more than
// the limit the grants gave when each of them was granted.
//
//  1. One decider per consumer. The evaluation loop's reconcile key is the
//     consumer, not the claim. controller-runtime never hands one key to two
//     workers at once, and leader election keeps one process active, so all
//     decisions about a consumer are made one reconcile after another, however
//     many claims arrive together. (Different consumers are evaluated in
//     parallel; they share nothing.)
//  2. A ledger that is never short. The loop decides against an in-memory
//     ledger of the consumer's granted claims, never against the informer
//     cache, which may not have delivered the loop's own last writes. The
//     ledger is seeded from an uncached List (a quorum read from etcd, which
//     sees every status written before it), then kept by the loop itself: a
//     claim enters it when the loop grants it and leaves it only when the
//     claim is seen being deleted, or is gone: no longer in the cache after
//     the cache showed it (an informer drops an object only once it was
//     deleted), or confirmed gone by an uncached Get when the cache never
//     showed it. A failed or ambiguous status write keeps the claim in it.
//     So the ledger always counts at least every live granted claim.
//  3. Recorded before granted. A grant decision is first written to the
//     consumer's buckets (allocated = ledger + the new claims) with
//     Status().Update carrying the resourceVersion the ledger acknowledged
//     for the bucket: the version it read from the API server when it was
//     seeded, or the one its own last write returned (the ledger keeps a
//     copy of each bucket at that version and writes from it, so a pass
//     reads no bucket from the API server). Only after every bucket write
//     succeeded does any claim get Granted=True. A crash in between leaves
//     a bucket counting a claim that is not granted: capacity is
//     under-used, never over-used, and repaired below.
//  4. A fence against a second writer. If anyone else wrote a bucket (a
//     previous leader still finishing, an operator), its resourceVersion
//     differs from the one the ledger acknowledged: the write conflicts, no
//     claim is granted, and the next reconcile reseeds the ledger. (When
//     the cache already shows a bucket newer than the ledger's copy, the
//     loop reads it and reseeds before deciding, so a foreign edit is also
//     set right when no grant is pending.) Whatever
//     a bucket records beyond the granted claims the quorum read shows is
//     held (counted as used) for HoldGrace, longer than a leader-election
//     lease, so another writer's grant that is recorded but not yet visible
//     on its claim cannot be handed out again; claims later seen granted
//     are adopted into the ledger and shrink the hold. When a hold expires
//     without being explained, it was a crash leak and the capacity returns.
//
// Releases write the buckets without the claim once the loop sees it
// deleting or gone; until then the buckets still count it (under-use, never
// over-use). Denied and pending answers do not touch the ledger, so they are
// written in parallel and without ordering.
//
// # What a grant costs
//
// A claim is granted by one status write (its Granted condition and
// allocations); the buckets of a consumer are written once per pass, for
// however many claims the pass decides, so a burst of claims costs a little
// more than one quota-plane write per claim besides its create. A pass
// reads nothing from the API server unless the ledger must be (re)seeded,
// a bucket is new or foreign-written, or a claim the cache never showed has
// to be confirmed gone.
//
// Claims are treated as immutable once granted: a granted claim keeps the
// amounts its status records. Lowering a grant never revokes a granted claim;
// it only stops new grants until usage falls below the new limit.
//
// The price is a full claim List when a consumer's ledger is (re)seeded:
// once per consumer per process, and after a foreign bucket write.
package quotaservice
