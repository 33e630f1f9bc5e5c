package quotaservice

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
)

// amounts maps a resource type to an amount in its base unit.
type amounts map[string]int64

// add adds b to a.
func (a amounts) add(b amounts) {
	for t, v := range b {
		a[t] += v
	}
}

// entry is one granted claim counted in a consumer's ledger.
type entry struct {
	key     types.NamespacedName
	amounts amounts
	// seen is true once the informer cache has shown the claim: from then
	// on, the cache no longer showing it means it is gone (an informer
	// drops an object only when it was deleted), so its release needs no
	// read from the API server.
	seen bool
}

// hold is capacity a bucket records that no granted claim visible to this
// process explains: another writer (a previous leader, or this process
// before a crash) recorded an allocation whose claim status is not visible
// yet, or never will be. It is counted as used until it expires, so such an
// allocation can never be granted twice; expiring repairs the leak of an
// allocation whose claim was never marked granted.
type hold struct {
	amount int64
	until  time.Time
}

// ledger is what one consumer's evaluation loop trusts: every live claim it
// knows to be granted (durably, or by its own decision awaiting the status
// write), holds, and the bucket versions it has reconciled with. Only the
// consumer's reconcile touches it, and controller-runtime never runs two
// reconciles of one key at once.
type ledger struct {
	// seeded is false until the entries were rebuilt from a consistent
	// read of every claim.
	seeded bool
	// entries are the granted claims by UID.
	entries map[types.UID]entry
	// holds by resource type.
	holds map[string]hold
	// acked is, per resource type, the resourceVersion of the bucket this
	// ledger was last reconciled with: written by this process, or read
	// when seeding. Any other version means someone else wrote the bucket.
	acked map[string]string
	// buckets are, per resource type, the bucket objects at the acked
	// versions: the loop writes from these copies instead of reading the
	// buckets from the API server on every pass.
	buckets map[string]*quotav1alpha1.AllowanceBucket
}

// newLedger returns an empty, unseeded ledger.
func newLedger() *ledger {
	return &ledger{entries: map[types.UID]entry{}, holds: map[string]hold{}, acked: map[string]string{},
		buckets: map[string]*quotav1alpha1.AllowanceBucket{}}
}

// stale reports whether the ledger must be reseeded before it can be
// trusted: never seeded, or a bucket is not at the version it acked.
func (l *ledger) stale(versions map[string]string) bool {
	if !l.seeded {
		return true
	}
	for t, rv := range versions {
		if l.acked[t] != rv {
			return true
		}
	}
	for t, rv := range l.acked {
		if rv != "" && versions[t] == "" {
			return true
		}
	}
	return false
}

// seed replaces the ledger with the granted claims of a consistent read,
// acks the buckets' versions, and holds whatever the buckets record beyond
// those claims for grace.
func (l *ledger) seed(granted map[types.UID]entry, buckets map[string]*quotav1alpha1.AllowanceBucket, now time.Time, grace time.Duration) {
	l.entries = granted
	l.acked = map[string]string{}
	l.buckets = map[string]*quotav1alpha1.AllowanceBucket{}
	holds := map[string]hold{}
	used := l.claimed()
	for t, b := range buckets {
		l.ack(t, b)
		if excess := b.Status.Allocated - used[t]; excess > 0 {
			holds[t] = hold{amount: excess, until: now.Add(grace)}
		}
	}
	l.holds = holds
	l.seeded = true
}

// ack records that the ledger is reconciled with bucket b of resource type
// t, as read or as written by this loop.
func (l *ledger) ack(t string, b *quotav1alpha1.AllowanceBucket) {
	l.acked[t] = b.ResourceVersion
	l.buckets[t] = b.DeepCopy()
}

// adopt counts a claim observed granted that the ledger does not know: it
// was granted by another writer, whose hold it now explains.
func (l *ledger) adopt(uid types.UID, e entry) {
	l.entries[uid] = e
	for t, v := range e.amounts {
		h, ok := l.holds[t]
		if !ok {
			continue
		}
		h.amount -= v
		if h.amount <= 0 {
			delete(l.holds, t)
			continue
		}
		l.holds[t] = h
	}
}

// claimed sums the entries.
func (l *ledger) claimed() amounts {
	out := amounts{}
	for _, e := range l.entries {
		out.add(e.amounts)
	}
	return out
}

// used sums the entries and the holds that have not expired at now.
func (l *ledger) used(now time.Time) amounts {
	out := l.claimed()
	for t, h := range l.holds {
		if now.Before(h.until) {
			out[t] += h.amount
		}
	}
	return out
}

// claimCount counts the entries with an amount of resource type t.
func (l *ledger) claimCount(t string) int32 {
	var n int32
	for _, e := range l.entries {
		if _, ok := e.amounts[t]; ok {
			n++
		}
	}
	return n
}

// nextExpiry returns how long until the next hold expires, 0 when none is
// active.
func (l *ledger) nextExpiry(now time.Time) time.Duration {
	var next time.Duration
	for _, h := range l.holds {
		if d := h.until.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

// types returns every resource type the ledger counts.
func (l *ledger) types() []string {
	set := map[string]bool{}
	for _, e := range l.entries {
		for t := range e.amounts {
			set[t] = true
		}
	}
	for t := range l.holds {
		set[t] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// grantedAmounts returns what a claim's status says it was allocated, and
// whether its Granted condition is True.
func grantedAmounts(c *quotav1alpha1.ResourceClaim) (amounts, bool) {
	if !meta.IsStatusConditionTrue(c.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted) {
		return nil, false
	}
	out := amounts{}
	for _, a := range c.Status.Allocations {
		if a.Status == quotav1alpha1.AllocationGranted {
			out[a.ResourceType] += a.AllocatedAmount
		}
	}
	// A claim granted by a writer that recorded no allocations still
	// counts for what it asked.
	if len(out) == 0 {
		for _, r := range c.Spec.Requests {
			out[r.ResourceType] += r.Amount
		}
	}
	return out, true
}

// verdict is the outcome of evaluating one claim.
type verdict int

const (
	// granted: every request fits; the claim is allocated.
	granted verdict = iota
	// exceeded: at least one request does not fit; nothing is allocated.
	exceeded
	// noBudget: a requested resource type has no active grant.
	noBudget
	// invalid: the claim fails validation.
	invalid
)

// candidate is a claim awaiting a decision.
type candidate struct {
	requests []quotav1alpha1.ResourceRequest
	// invalid is why the claim fails validation; empty when valid.
	invalid string
	// refusal is the reason a cell's claim is refused for its source
	// (invalid says why in words); empty when it is not.
	refusal string
}

// decision is the outcome for one candidate, with one message per request
// and one for the claim.
type decision struct {
	verdict verdict
	message string
	// perType holds a message for each request, by resource type.
	perType map[string]string
	// fits reports, by resource type, whether the request would fit.
	fits map[string]bool
	// refusal is the candidate's refusal reason, if any (verdict invalid).
	refusal string
}

// decide evaluates candidates in order against limits (present only for
// resource types with at least one active grant) and what is already used.
// Each claim is atomic: granted when every request fits, otherwise nothing
// of it is counted. A denied claim does not block later, smaller ones.
// It returns one decision per candidate and the usage after the grants.
func decide(cands []candidate, limits map[string]int64, used amounts) ([]decision, amounts) {
	use := maps.Clone(used)
	if use == nil {
		use = amounts{}
	}
	out := make([]decision, 0, len(cands))
	for _, c := range cands {
		out = append(out, decideOne(c, limits, use))
		if out[len(out)-1].verdict == granted {
			for _, r := range c.requests {
				use[r.ResourceType] += r.Amount
			}
		}
	}
	return out, use
}

// decideOne evaluates one candidate.
func decideOne(c candidate, limits map[string]int64, use amounts) decision {
	d := decision{perType: map[string]string{}, fits: map[string]bool{}}
	if c.invalid != "" {
		d.verdict, d.message, d.refusal = invalid, c.invalid, c.refusal
		for _, r := range c.requests {
			d.perType[r.ResourceType] = c.invalid
		}
		return d
	}
	var missing, over, given []string
	for _, r := range c.requests {
		limit, ok := limits[r.ResourceType]
		switch {
		case !ok && r.Amount > 0:
			msg := fmt.Sprintf("no active ResourceGrant gives this consumer any %s", r.ResourceType)
			missing = append(missing, msg)
			d.perType[r.ResourceType] = msg
		case use[r.ResourceType]+r.Amount > limit && r.Amount > 0:
			msg := fmt.Sprintf("requested %d %s, %d of %d available", r.Amount, r.ResourceType, max(limit-use[r.ResourceType], 0), limit)
			over = append(over, msg)
			d.perType[r.ResourceType] = msg
		default:
			d.fits[r.ResourceType] = true
			given = append(given, fmt.Sprintf("%d %s", r.Amount, r.ResourceType))
		}
	}
	switch {
	case len(missing) > 0:
		d.verdict, d.message = noBudget, strings.Join(missing, "; ")
	case len(over) > 0:
		d.verdict, d.message = exceeded, strings.Join(over, "; ")
	default:
		d.verdict, d.message = granted, "granted "+strings.Join(given, ", ")
	}
	return d
}

// consumerKey renders a consumer reference for indexes and logs.
func consumerKey(c quotav1alpha1.ConsumerRef) string {
	return c.APIGroup + "/" + c.Kind + "/" + c.Namespace + "/" + c.Name
}

// sameConsumer reports whether two references name the same consumer.
func sameConsumer(a, b quotav1alpha1.ConsumerRef) bool {
	return a == b
}

// creationOrder orders claims first come, first served: creation time, then
// namespace and name for claims created in the same second.
func creationOrder(a, b *quotav1alpha1.ResourceClaim) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// keyOf returns a claim's namespaced name.
func keyOf(o metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}
