package quotaservice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/patch"
)

const (
	// conflictRequeue is how soon a consumer is looked at again after a
	// write lost an optimistic-concurrency race: the newer version is
	// already on its way, no backoff is needed.
	conflictRequeue = 250 * time.Millisecond
	// writeConcurrency bounds the claim writes of one reconcile in flight.
	writeConcurrency = 16
)

// consumerReconciler is the evaluation loop of the quota service. Its
// reconcile key is a consumer, not a claim: every decision about a
// consumer's claims is made by one reconcile at a time (controller-runtime
// never processes one key concurrently), against a ledger only that loop
// touches, and is recorded in the consumer's buckets before any claim says
// Granted. See the package documentation for why this never over-grants.
type consumerReconciler struct {
	client          client.Client
	reader          client.Reader
	clock           clock.PassiveClock
	bucketNamespace string
	holdGrace       time.Duration
	// maxPerSource caps the claims one cell has outstanding in the plane.
	maxPerSource int
	// recorder writes the events of refusals; none when nil.
	recorder events.EventRecorder

	mu      sync.Mutex
	ledgers map[quotav1alpha1.ConsumerRef]*ledger

	// own recognises claim versions the loop's own writes superseded: a
	// claim the cache still shows as it was before the loop answered it
	// is not written again (the write would only conflict), since the
	// event of the answer brings the consumer back.
	own ownwrites.Tracker
}

// observation is what one reconcile read about a consumer.
type observation struct {
	// claims of the consumer, from the cache, first come first served.
	claims []*quotav1alpha1.ResourceClaim
	byUID  map[types.UID]*quotav1alpha1.ResourceClaim
	regs   registrations
	limits map[string]int64
	refs   map[string][]quotav1alpha1.ContributingGrantRef
	// buckets by resource type, read from the API server (not the cache):
	// their resourceVersion guards the writes.
	buckets map[string]*quotav1alpha1.AllowanceBucket
}

// versions returns the resourceVersion of each bucket.
func (o *observation) versions() map[string]string {
	out := make(map[string]string, len(o.buckets))
	for t, b := range o.buckets {
		out[t] = b.ResourceVersion
	}
	return out
}

// Reconcile settles every claim of one consumer.
func (r *consumerReconciler) Reconcile(ctx context.Context, consumer quotav1alpha1.ConsumerRef) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("consumer", consumerKey(consumer))
	ctx = ctrl.LoggerInto(ctx, log)
	l := r.ledgerOf(consumer)
	now := r.clock.Now()

	obs, err := r.observe(ctx, consumer, l)
	if err != nil {
		return reconcile.Result{}, err
	}
	if l.stale(obs.versions()) {
		if err := r.seed(ctx, consumer, l, obs, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	adoptGranted(l, obs)
	if err := r.releaseGone(ctx, consumer, l, obs); err != nil {
		return reconcile.Result{}, err
	}
	facts, err := readSources(ctx, r.client, undecided(l, obs))
	if err != nil {
		return reconcile.Result{}, err
	}
	cands, decisions := decideCandidates(l, obs, now, func(c *quotav1alpha1.ResourceClaim) refusal {
		return judgeSource(c, facts, r.maxPerSource)
	})

	// Nothing says Granted before the buckets durably record it.
	if err := r.recordBuckets(ctx, consumer, l, obs, now); err != nil {
		l.seeded = false
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			log.V(1).Info("A bucket changed since it was read; reseeding the ledger", "error", err.Error())
			return reconcile.Result{RequeueAfter: conflictRequeue}, nil
		}
		return reconcile.Result{}, err
	}
	conflicted, err := r.applyClaims(ctx, consumer, l, obs, cands, decisions, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	after := l.nextExpiry(now)
	if conflicted && (after == 0 || after > conflictRequeue) {
		after = conflictRequeue
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// ledgerOf returns the consumer's ledger, creating it on first use.
func (r *consumerReconciler) ledgerOf(consumer quotav1alpha1.ConsumerRef) *ledger {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.ledgers[consumer]
	if !ok {
		l = newLedger()
		r.ledgers[consumer] = l
	}
	return l
}

// observe reads the consumer's claims, grants and the registrations from the
// cache, and its buckets from the API server.
func (r *consumerReconciler) observe(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger) (*observation, error) {
	key := consumerKey(consumer)
	claims := &quotav1alpha1.ResourceClaimList{}
	if err := r.client.List(ctx, claims, client.MatchingFields{consumerIndex: key}); err != nil {
		return nil, fmt.Errorf("failed to list ResourceClaims of %s: %w", key, err)
	}
	grants := &quotav1alpha1.ResourceGrantList{}
	if err := r.client.List(ctx, grants, client.MatchingFields{consumerIndex: key}); err != nil {
		return nil, fmt.Errorf("failed to list ResourceGrants of %s: %w", key, err)
	}
	regs := &quotav1alpha1.ResourceRegistrationList{}
	if err := r.client.List(ctx, regs); err != nil {
		return nil, fmt.Errorf("failed to list ResourceRegistrations: %w", err)
	}
	cached := &quotav1alpha1.AllowanceBucketList{}
	if err := r.client.List(ctx, cached, client.InNamespace(r.bucketNamespace), client.MatchingFields{consumerIndex: key}); err != nil {
		return nil, fmt.Errorf("failed to list AllowanceBuckets of %s: %w", key, err)
	}
	obs := newObservation(claims.Items, grants.Items, regs.Items, r.bucketNamespace)
	if err := r.observeBuckets(ctx, consumer, l, obs, cached.Items); err != nil {
		return nil, err
	}
	return obs, nil
}

// newObservation indexes the consumer's claims, first come first served,
// and the limits its grants give.
func newObservation(claims []quotav1alpha1.ResourceClaim, grants []quotav1alpha1.ResourceGrant,
	regs []quotav1alpha1.ResourceRegistration, bucketNamespace string) *observation {
	obs := &observation{byUID: map[types.UID]*quotav1alpha1.ResourceClaim{}, regs: indexRegistrations(regs)}
	for i := range claims {
		c := &claims[i]
		obs.claims = append(obs.claims, c)
		obs.byUID[c.UID] = c
	}
	slices.SortFunc(obs.claims, creationOrder)
	obs.limits, obs.refs = limits(grants, obs.regs, bucketNamespace)
	return obs
}

// observeBuckets fills obs.buckets for every type that has, had or may get
// a bucket. A seeded ledger writes from its own copy of each bucket, at
// the version it acknowledged: a foreign write since makes that write
// conflict, so the copy needs no fresh read to be safe. A bucket is read
// from the API server only when the ledger has no copy, when the cache
// does not show it (just created, or deleted), or when the cache shows a
// newer version than the copy (someone else wrote it: the read makes the
// ledger reseed now rather than at its next write).
func (r *consumerReconciler) observeBuckets(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger,
	obs *observation, cached []quotav1alpha1.AllowanceBucket) error {
	cachedOf := map[string]*quotav1alpha1.AllowanceBucket{}
	for i := range cached {
		cachedOf[cached[i].Spec.ResourceType] = &cached[i]
	}
	obs.buckets = map[string]*quotav1alpha1.AllowanceBucket{}
	var fetch []string
	for _, t := range bucketTypes(l, obs.limits, cachedOf) {
		own := l.buckets[t]
		if !l.seeded || own == nil || !ownCopyCurrent(own, cachedOf[t]) {
			fetch = append(fetch, t)
			continue
		}
		obs.buckets[t] = own.DeepCopy()
	}
	read, err := r.readBuckets(ctx, consumer, fetch)
	if err != nil {
		return err
	}
	for i, t := range fetch {
		if read[i] != nil {
			obs.buckets[t] = read[i]
		}
	}
	return nil
}

// bucketTypes are, sorted, the resource types that have, had or may get a
// bucket: those the grants limit, those the ledger holds or acknowledged,
// and those the cache shows a bucket of.
func bucketTypes(l *ledger, limits map[string]int64, cachedOf map[string]*quotav1alpha1.AllowanceBucket) []string {
	wanted := map[string]bool{}
	for t := range limits {
		wanted[t] = true
	}
	for _, t := range l.types() {
		wanted[t] = true
	}
	for t := range l.acked {
		wanted[t] = true
	}
	for t := range cachedOf {
		wanted[t] = true
	}
	return slices.Sorted(maps.Keys(wanted))
}

// readBuckets reads the consumer's buckets of the given types from the API
// server; an entry is nil where the bucket does not exist. The buckets are
// read at once, not one round trip after another: each read stands on its
// own (every write is guarded by the version it read).
func (r *consumerReconciler) readBuckets(ctx context.Context, consumer quotav1alpha1.ConsumerRef, resourceTypes []string) ([]*quotav1alpha1.AllowanceBucket, error) {
	read := make([]*quotav1alpha1.AllowanceBucket, len(resourceTypes))
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range resourceTypes {
		g.Go(func() error {
			b := &quotav1alpha1.AllowanceBucket{}
			err := r.reader.Get(gctx, client.ObjectKey{Namespace: r.bucketNamespace, Name: bucketName(consumer, t)}, b)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("failed to read the %s bucket of %s: %w", t, consumerKey(consumer), err)
			default:
				read[i] = b
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return read, nil
}

// ownCopyCurrent reports whether the ledger's copy of a bucket is at least
// as new as the cache shows it: the cache trails the loop's own writes, so
// an older or equal cached version is the loop's own past. A bucket the
// cache does not show, or versions that cannot be compared, are not
// trusted.
func ownCopyCurrent(own, cached *quotav1alpha1.AllowanceBucket) bool {
	if cached == nil || cached.UID != own.UID {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, own.ResourceVersion)
	return err == nil && c <= 0
}

// seed rebuilds the ledger from a consistent read of every claim: an
// uncached List reads from etcd with quorum, so it sees every claim status
// written before it, including writes the cache has not delivered yet.
func (r *consumerReconciler) seed(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger, obs *observation, now time.Time) error {
	all := &quotav1alpha1.ResourceClaimList{}
	if err := r.reader.List(ctx, all); err != nil {
		return fmt.Errorf("failed to list ResourceClaims to seed the ledger of %s: %w", consumerKey(consumer), err)
	}
	granted := map[types.UID]entry{}
	for i := range all.Items {
		c := &all.Items[i]
		if c.DeletionTimestamp != nil || !sameConsumer(c.Spec.ConsumerRef, consumer) {
			continue
		}
		if a, ok := grantedAmounts(c); ok {
			_, seen := obs.byUID[c.UID]
			granted[c.UID] = entry{key: keyOf(c), amounts: a, seen: seen}
		}
	}
	l.seed(granted, obs.buckets, now, r.holdGrace)
	if len(l.holds) > 0 {
		ctrl.LoggerFrom(ctx).Info("Buckets record allocations no granted claim explains; holding them",
			"holds", fmt.Sprint(l.holds), "grace", r.holdGrace)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Seeded the ledger", "granted", len(granted))
	return nil
}

// adoptGranted counts claims the cache shows granted that the ledger does
// not know yet (granted by another writer, or seen before the ledger was).
func adoptGranted(l *ledger, obs *observation) {
	for _, c := range obs.claims {
		if c.DeletionTimestamp != nil {
			continue
		}
		if e, ok := l.entries[c.UID]; ok {
			if !e.seen {
				e.seen = true
				l.entries[c.UID] = e
			}
			continue
		}
		if a, ok := grantedAmounts(c); ok {
			l.adopt(c.UID, entry{key: keyOf(c), amounts: a, seen: true})
		}
	}
}

// releaseGone drops the entries of claims being deleted or gone. A claim
// the cache showed before and no longer shows is gone. One it never showed
// is checked against the API server first: a ledger seeded from a
// consistent read may know claims the cache has not delivered yet, and
// forgetting one of those would free its capacity twice.
func (r *consumerReconciler) releaseGone(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger, obs *observation) error {
	for uid, e := range l.entries {
		c, ok := obs.byUID[uid]
		if ok {
			if c.DeletionTimestamp != nil {
				delete(l.entries, uid)
			}
			continue
		}
		if e.seen {
			delete(l.entries, uid)
			continue
		}
		fresh := &quotav1alpha1.ResourceClaim{}
		err := r.reader.Get(ctx, e.key, fresh)
		switch {
		case apierrors.IsNotFound(err):
			delete(l.entries, uid)
		case err != nil:
			return fmt.Errorf("failed to read ResourceClaim %s: %w", e.key, err)
		case fresh.UID != uid || fresh.DeletionTimestamp != nil || !sameConsumer(fresh.Spec.ConsumerRef, consumer):
			delete(l.entries, uid)
		}
	}
	return nil
}

// undecided returns the live claims the ledger does not count, in creation
// order: the claims a pass decides.
func undecided(l *ledger, obs *observation) []*quotav1alpha1.ResourceClaim {
	claims := make([]*quotav1alpha1.ResourceClaim, 0, len(obs.claims))
	for _, c := range obs.claims {
		if c.DeletionTimestamp != nil {
			continue
		}
		if _, ok := l.entries[c.UID]; ok {
			continue
		}
		claims = append(claims, c)
	}
	return claims
}

// decideCandidates evaluates every live claim the ledger does not count, in
// creation order, and counts the granted ones in the ledger (pending their
// bucket and status writes). judge says whether a claim is refused for the
// cell that made it; a refused claim is answered as invalid and takes no
// capacity.
func decideCandidates(l *ledger, obs *observation, now time.Time, judge func(*quotav1alpha1.ResourceClaim) refusal) ([]*quotav1alpha1.ResourceClaim, []decision) {
	claims := undecided(l, obs)
	cands := make([]candidate, 0, len(claims))
	for _, c := range claims {
		cand := candidate{requests: c.Spec.Requests, invalid: validateClaim(c, obs.regs)}
		if r := judge(c); r.reason != "" {
			cand.invalid, cand.refusal = r.message, r.reason
		}
		cands = append(cands, cand)
	}
	decisions, _ := decide(cands, obs.limits, l.used(now))
	for i, d := range decisions {
		if d.verdict != granted {
			continue
		}
		a := amounts{}
		for _, req := range claims[i].Spec.Requests {
			a[req.ResourceType] += req.Amount
		}
		l.entries[claims[i].UID] = entry{key: keyOf(claims[i]), amounts: a, seen: true}
	}
	return claims, decisions
}

// recordBuckets writes each bucket whose figures changed, guarded by the
// resourceVersion it was read at: if anyone else wrote it since, the write
// fails with a conflict and nothing is granted.
func (r *consumerReconciler) recordBuckets(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger, obs *observation, now time.Time) error {
	used := l.used(now)
	wanted := map[string]bool{}
	for t := range obs.limits {
		wanted[t] = true
	}
	for _, t := range l.types() {
		wanted[t] = true
	}
	for t := range obs.buckets {
		wanted[t] = true
	}
	// Each bucket is its own object, guarded by its own resourceVersion:
	// they are written at once, and every write has landed (or the
	// reconcile fails) before any claim is answered.
	types := slices.Sorted(maps.Keys(wanted))
	acked := make([]*quotav1alpha1.AllowanceBucket, len(types))
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range types {
		b := obs.buckets[t]
		g.Go(func() error {
			if b == nil {
				b = &quotav1alpha1.AllowanceBucket{
					ObjectMeta: metav1.ObjectMeta{Name: bucketName(consumer, t), Namespace: r.bucketNamespace},
					Spec:       quotav1alpha1.AllowanceBucketSpec{ConsumerRef: consumer, ResourceType: t},
				}
				if err := r.client.Create(gctx, b); err != nil {
					return fmt.Errorf("failed to create AllowanceBucket %s: %w", b.Name, err)
				}
			}
			// Reads of the ledger only: the writes run at once.
			want := bucketStatus(b, t, l, used, obs.limits, obs.refs)
			if !sameFigures(b.Status, want) {
				ts := metav1.NewTime(now)
				want.LastReconciliation = &ts
				b.Status = want
				if err := r.client.Status().Update(gctx, b); err != nil {
					return fmt.Errorf("failed to record allocations in AllowanceBucket %s: %w", b.Name, err)
				}
			}
			acked[i] = b
			return nil
		})
	}
	err := g.Wait()
	for i, t := range types {
		if acked[i] != nil {
			l.ack(t, acked[i])
		}
	}
	return err
}

// applyClaims writes what the decisions and the ledger say: granted claims
// their Granted status, denied and pending claims their answer; claims being
// deleted that still carry the finalizer earlier versions of the service put
// on granted claims lose it, their allocation being released. Only changed
// statuses are written. It reports whether a write lost an
// optimistic-concurrency race.
func (r *consumerReconciler) applyClaims(ctx context.Context, consumer quotav1alpha1.ConsumerRef, l *ledger, obs *observation,
	cands []*quotav1alpha1.ResourceClaim, decisions []decision, now time.Time,
) (bool, error) {
	ts := metav1.NewTime(now)
	bucketOf := func(t string) string { return bucketName(consumer, t) }
	writes := make([]func(context.Context) error, 0, len(l.entries)+len(obs.claims))

	for uid, e := range l.entries {
		c := obs.byUID[uid]
		if c == nil || c.DeletionTimestamp != nil || r.own.Stale(keyOf(c), c.UID, c.ResourceVersion) {
			continue
		}
		if _, isGranted := grantedAmounts(c); isGranted {
			continue
		}
		s := grantedStatus(c, e.amounts, bucketOf, ts)
		writes = append(writes, func(ctx context.Context) error { return r.grant(ctx, c, s) })
	}
	for i, c := range cands {
		if decisions[i].verdict == granted || r.own.Stale(keyOf(c), c.UID, c.ResourceVersion) {
			continue
		}
		d := decisions[i]
		want := claimStatus(c, d, bucketOf, ts)
		if sameClaimStatus(c.Status, want) {
			continue
		}
		writes = append(writes, func(ctx context.Context) error {
			if err := r.patchStatus(ctx, c, want); err != nil {
				return err
			}
			if d.refusal != "" {
				r.announceRefusal(ctx, c, d)
			}
			return nil
		})
	}
	for _, c := range obs.claims {
		if c.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(c, Finalizer) {
			writes = append(writes, func(ctx context.Context) error { return r.removeFinalizer(ctx, c) })
		}
	}

	var mu sync.Mutex
	var errs []error
	conflicted := false
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writeConcurrency)
	for _, w := range writes {
		g.Go(func() error {
			err := w(gctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil, apierrors.IsNotFound(err):
			case apierrors.IsConflict(err):
				conflicted = true
			default:
				errs = append(errs, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return conflicted, errors.Join(errs...)
}

// grant marks a claim the ledger counts Granted, guarded by the
// resourceVersion the decision was made on (so a claim replaced under the
// same name is never marked).
func (r *consumerReconciler) grant(ctx context.Context, c *quotav1alpha1.ResourceClaim, s quotav1alpha1.ResourceClaimStatus) error {
	if err := r.patchStatus(ctx, c, s); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Granted ResourceClaim", "claim", keyOf(c))
	return nil
}

// patchStatus writes a claim's status only if the claim is still at the
// resourceVersion the decision was made on: an answer is never written
// over a newer state (another writer's grant, or a claim replaced under the
// same name); the conflict brings the claim back.
func (r *consumerReconciler) patchStatus(ctx context.Context, c *quotav1alpha1.ResourceClaim, s quotav1alpha1.ResourceClaimStatus) error {
	c = c.DeepCopy()
	wrote, err := patch.Status(ctx, r.client, c, func(c *quotav1alpha1.ResourceClaim) { c.Status = s }, patch.WithOptimisticLock())
	if wrote && err == nil {
		r.own.Wrote(keyOf(c), c.UID, c.ResourceVersion)
	}
	return err
}

// removeFinalizer lets a deleted claim that an earlier version of the
// service granted go, once its allocation is released.
func (r *consumerReconciler) removeFinalizer(ctx context.Context, c *quotav1alpha1.ResourceClaim) error {
	c = c.DeepCopy()
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to remove the finalizer of ResourceClaim %s: %w", keyOf(c), err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released ResourceClaim", "claim", keyOf(c))
	return nil
}
