package quotaservice

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
)

const (
	instances = "compute.datumapis.com/instances"
	vcpus     = "compute.datumapis.com/vcpus"
	memory    = "compute.datumapis.com/memory"
)

// ask builds a candidate for one instance of cpu millicores and mem MiB.
func ask(cpu, mem int64) candidate {
	return candidate{requests: []quotav1alpha1.ResourceRequest{
		{ResourceType: instances, Amount: 1}, {ResourceType: vcpus, Amount: cpu}, {ResourceType: memory, Amount: mem},
	}}
}

// computeLimits is a grant of n instances, cpu millicores and mem MiB.
func computeLimits(n, cpu, mem int64) map[string]int64 {
	return map[string]int64{instances: n, vcpus: cpu, memory: mem}
}

func TestDecide(t *testing.T) {
	tests := map[string]struct {
		cands        []candidate
		limits       map[string]int64
		used         amounts
		wantVerdicts []verdict
		wantMessages map[int]string
		wantUsed     amounts
	}{
		"claims within the limit are all granted": {
			cands:        []candidate{ask(1000, 2048), ask(1000, 2048)},
			limits:       computeLimits(10, 40000, 81920),
			wantVerdicts: []verdict{granted, granted},
			wantUsed:     amounts{instances: 2, vcpus: 2000, memory: 4096},
		},
		"the claim that would cross the limit is denied and says how much is left": {
			cands:        []candidate{ask(1000, 2048), ask(1000, 2048)},
			limits:       computeLimits(1, 40000, 81920),
			wantVerdicts: []verdict{granted, exceeded},
			wantMessages: map[int]string{1: "requested 1 compute.datumapis.com/instances, 0 of 1 available"},
			wantUsed:     amounts{instances: 1, vcpus: 1000, memory: 2048},
		},
		"usage already counted reduces what is available": {
			cands:        []candidate{ask(1000, 2048)},
			limits:       computeLimits(10, 40000, 81920),
			used:         amounts{instances: 10, vcpus: 10000, memory: 20480},
			wantVerdicts: []verdict{exceeded},
			wantMessages: map[int]string{0: "requested 1 compute.datumapis.com/instances, 0 of 10 available"},
			wantUsed:     amounts{instances: 10, vcpus: 10000, memory: 20480},
		},
		"a claim is all or nothing: an instance slot is not taken when its vCPU does not fit": {
			cands:        []candidate{ask(8000, 1024), ask(1000, 1024)},
			limits:       computeLimits(1, 4000, 81920),
			wantVerdicts: []verdict{exceeded, granted},
			wantMessages: map[int]string{0: "requested 8000 compute.datumapis.com/vcpus, 4000 of 4000 available"},
			wantUsed:     amounts{instances: 1, vcpus: 1000, memory: 1024},
		},
		"every request that does not fit is named": {
			cands:        []candidate{ask(8000, 4096)},
			limits:       computeLimits(0, 4000, 2048),
			wantVerdicts: []verdict{exceeded},
			wantMessages: map[int]string{0: "requested 1 compute.datumapis.com/instances, 0 of 0 available; requested 8000 compute.datumapis.com/vcpus, 4000 of 4000 available; requested 4096 compute.datumapis.com/memory, 2048 of 2048 available"},
			wantUsed:     amounts{},
		},
		"a denied big claim does not block a later small one": {
			cands:        []candidate{ask(1000, 2048), ask(30000, 2048), ask(1000, 2048)},
			limits:       computeLimits(10, 4000, 81920),
			wantVerdicts: []verdict{granted, exceeded, granted},
			wantUsed:     amounts{instances: 2, vcpus: 2000, memory: 4096},
		},
		"a resource type no grant covers leaves the claim pending": {
			cands:        []candidate{ask(1000, 2048)},
			limits:       map[string]int64{instances: 10, vcpus: 40000},
			wantVerdicts: []verdict{noBudget},
			wantMessages: map[int]string{0: "no active ResourceGrant gives this consumer any compute.datumapis.com/memory"},
			wantUsed:     amounts{},
		},
		"a zero request needs no grant": {
			cands:        []candidate{ask(1000, 0)},
			limits:       map[string]int64{instances: 10, vcpus: 40000},
			wantVerdicts: []verdict{granted},
			wantUsed:     amounts{instances: 1, vcpus: 1000, memory: 0},
		},
		"an invalid claim is neither granted nor counted": {
			cands:        []candidate{{requests: ask(1000, 2048).requests, invalid: "resource type x is not registered"}, ask(1000, 2048)},
			limits:       computeLimits(1, 40000, 81920),
			wantVerdicts: []verdict{invalid, granted},
			wantMessages: map[int]string{0: "resource type x is not registered"},
			wantUsed:     amounts{instances: 1, vcpus: 1000, memory: 2048},
		},
		"no grant at all leaves every claim pending": {
			cands:        []candidate{ask(1000, 2048)},
			wantVerdicts: []verdict{noBudget},
			wantUsed:     amounts{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, used := decide(tc.cands, tc.limits, tc.used)
			verdicts := make([]verdict, 0, len(got))
			for _, d := range got {
				verdicts = append(verdicts, d.verdict)
			}
			if diff := cmp.Diff(tc.wantVerdicts, verdicts); diff != "" {
				t.Errorf("verdicts mismatch (-want +got):\n%s", diff)
			}
			for i, msg := range tc.wantMessages {
				if got[i].message != msg {
					t.Errorf("message %d = %q, want %q", i, got[i].message, msg)
				}
			}
			if diff := cmp.Diff(map[string]int64(tc.wantUsed), map[string]int64(used), cmpZeroAsMissing); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpZeroAsMissing treats a zero amount like a missing one.
var cmpZeroAsMissing = cmp.Transformer("dropZero", func(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
})

func TestDecideNeverUsesTheCallersUsage(t *testing.T) {
	used := amounts{instances: 1}
	decide([]candidate{ask(1, 1)}, computeLimits(10, 10, 10), used)
	if used[instances] != 1 {
		t.Fatalf("decide changed the caller's usage: %v", used)
	}
}

func bucket(rv string, allocated int64) *quotav1alpha1.AllowanceBucket {
	return &quotav1alpha1.AllowanceBucket{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv},
		Status:     quotav1alpha1.AllowanceBucketStatus{Allocated: allocated},
	}
}

func TestLedgerSeedHoldsWhatNoGrantedClaimExplains(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLedger()
	l.seed(map[types.UID]entry{
		"a": {amounts: amounts{instances: 1}},
		"b": {amounts: amounts{instances: 1}},
	}, map[string]*quotav1alpha1.AllowanceBucket{instances: bucket("7", 3), vcpus: bucket("8", 0)}, now, 30*time.Second)

	if got := l.used(now)[instances]; got != 3 {
		t.Errorf("while held, used = %d, want 3 (2 claims + 1 held)", got)
	}
	if got := l.nextExpiry(now); got != 30*time.Second {
		t.Errorf("nextExpiry = %s, want 30s", got)
	}
	if got := l.used(now.Add(31 * time.Second))[instances]; got != 2 {
		t.Errorf("after the hold expired, used = %d, want 2", got)
	}
	if l.stale(map[string]string{instances: "7", vcpus: "8"}) {
		t.Errorf("a ledger seeded at the buckets' versions is stale")
	}
}

func TestLedgerAdoptionExplainsHolds(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLedger()
	l.seed(map[types.UID]entry{}, map[string]*quotav1alpha1.AllowanceBucket{instances: bucket("1", 2)}, now, time.Minute)
	l.adopt("x", entry{amounts: amounts{instances: 1}})
	if got := l.used(now)[instances]; got != 2 {
		t.Errorf("after adopting one held claim, used = %d, want 2", got)
	}
	l.adopt("y", entry{amounts: amounts{instances: 1}})
	if len(l.holds) != 0 {
		t.Errorf("holds = %v, want none once every allocation is explained", l.holds)
	}
	if got := l.used(now)[instances]; got != 2 {
		t.Errorf("used = %d, want 2", got)
	}
}

func TestLedgerStale(t *testing.T) {
	seeded := func(acked map[string]string) *ledger {
		l := newLedger()
		l.seeded = true
		l.acked = acked
		return l
	}
	tests := map[string]struct {
		ledger   *ledger
		versions map[string]string
		want     bool
	}{
		"an unseeded ledger is stale":                                  {ledger: newLedger(), want: true},
		"buckets at the acknowledged versions are trusted":             {ledger: seeded(map[string]string{instances: "5"}), versions: map[string]string{instances: "5"}},
		"a bucket written by someone else makes the ledger stale":      {ledger: seeded(map[string]string{instances: "5"}), versions: map[string]string{instances: "6"}, want: true},
		"a bucket that disappeared makes the ledger stale":             {ledger: seeded(map[string]string{instances: "5"}), versions: map[string]string{}, want: true},
		"a bucket nobody acknowledged makes the ledger stale":          {ledger: seeded(map[string]string{}), versions: map[string]string{instances: "1"}, want: true},
		"no buckets at all for a consumer without grants is trustable": {ledger: seeded(map[string]string{}), versions: map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.ledger.stale(tc.versions); got != tc.want {
				t.Errorf("stale() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGrantedAmounts(t *testing.T) {
	tests := map[string]struct {
		claim     *quotav1alpha1.ResourceClaim
		want      amounts
		wantGrant bool
	}{
		"a granted claim counts its allocated amounts": {
			claim: &quotav1alpha1.ResourceClaim{Status: quotav1alpha1.ResourceClaimStatus{
				Conditions:  []metav1.Condition{{Type: "Granted", Status: metav1.ConditionTrue}},
				Allocations: []quotav1alpha1.RequestAllocation{{ResourceType: instances, Status: quotav1alpha1.AllocationGranted, AllocatedAmount: 1}},
			}},
			want: amounts{instances: 1}, wantGrant: true,
		},
		"a granted claim without allocations counts what it asked": {
			claim: &quotav1alpha1.ResourceClaim{
				Spec:   quotav1alpha1.ResourceClaimSpec{Requests: []quotav1alpha1.ResourceRequest{{ResourceType: vcpus, Amount: 500}}},
				Status: quotav1alpha1.ResourceClaimStatus{Conditions: []metav1.Condition{{Type: "Granted", Status: metav1.ConditionTrue}}},
			},
			want: amounts{vcpus: 500}, wantGrant: true,
		},
		"a denied claim counts nothing": {
			claim: &quotav1alpha1.ResourceClaim{Status: quotav1alpha1.ResourceClaimStatus{
				Conditions: []metav1.Condition{{Type: "Granted", Status: metav1.ConditionFalse}},
			}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := grantedAmounts(tc.claim)
			if ok != tc.wantGrant {
				t.Fatalf("granted = %v, want %v", ok, tc.wantGrant)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("amounts mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwnCopyCurrent(t *testing.T) {
	bucket := func(uid types.UID, rv string) *quotav1alpha1.AllowanceBucket {
		return &quotav1alpha1.AllowanceBucket{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
	}
	tests := map[string]struct {
		own, cached *quotav1alpha1.AllowanceBucket
		want        bool
	}{
		"the cache shows the version the loop wrote":    {own: bucket("a", "20"), cached: bucket("a", "20"), want: true},
		"the cache trails the loop's own write":         {own: bucket("a", "20"), cached: bucket("a", "9"), want: true},
		"someone wrote the bucket after the loop":       {own: bucket("a", "20"), cached: bucket("a", "21"), want: false},
		"the cache does not show the bucket":            {own: bucket("a", "20"), cached: nil, want: false},
		"the bucket was replaced under the same name":   {own: bucket("a", "20"), cached: bucket("b", "5"), want: false},
		"versions that cannot be compared are not used": {own: bucket("a", "x"), cached: bucket("a", "20"), want: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ownCopyCurrent(tt.own, tt.cached); got != tt.want {
				t.Errorf("ownCopyCurrent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAckKeepsACopy(t *testing.T) {
	l := newLedger()
	b := &quotav1alpha1.AllowanceBucket{ObjectMeta: metav1.ObjectMeta{UID: "a", ResourceVersion: "7"}}
	b.Status.Allocated = 3
	l.ack(instances, b)
	b.Status.Allocated = 99
	b.ResourceVersion = "8"
	if got := l.buckets[instances]; got.Status.Allocated != 3 || got.ResourceVersion != "7" || l.acked[instances] != "7" {
		t.Errorf("the ledger's copy changed with the caller's object: %+v, acked %q", got, l.acked[instances])
	}
}
