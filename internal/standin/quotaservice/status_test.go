package quotaservice

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/quota"
)

func TestBucketName(t *testing.T) {
	p1 := quota.ProjectRef("p1")
	long := quota.ProjectRef(strings.Repeat("a", 63))
	names := map[string]bool{}
	for _, tc := range []struct {
		consumer quotav1alpha1.ConsumerRef
		t        string
	}{
		{p1, instances}, {p1, vcpus}, {p1, memory},
		{quota.ProjectRef("p2"), instances},
		{quotav1alpha1.ConsumerRef{APIGroup: "x.io", Kind: "Project", Name: "p1"}, instances},
		{long, memory},
	} {
		got := bucketName(tc.consumer, tc.t)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("bucketName(%v, %s) = %q is not a valid name: %v", tc.consumer, tc.t, got, errs)
		}
		if got != bucketName(tc.consumer, tc.t) {
			t.Errorf("bucketName is not deterministic")
		}
		if names[got] {
			t.Errorf("bucketName(%v, %s) = %q collides", tc.consumer, tc.t, got)
		}
		names[got] = true
	}
	if got := bucketName(p1, instances); !strings.HasPrefix(got, "project-p1-instances-") {
		t.Errorf("bucketName = %q, want a readable project-p1-instances- prefix", got)
	}
}

func TestClaimStatus(t *testing.T) {
	now := metav1.NewTime(time.Unix(2000, 0))
	earlier := metav1.NewTime(time.Unix(1000, 0))
	claim := claimFor("Project", "Project", instances, vcpus)
	claim.Generation = 2
	bucketOf := func(t string) string { return "bucket-" + t[strings.LastIndex(t, "/")+1:] }

	tests := map[string]struct {
		d          decision
		wantCond   metav1.Condition
		wantAllocs []quotav1alpha1.RequestAllocation
	}{
		"a granted claim allocates every request from its bucket": {
			d: decision{verdict: granted, message: "granted 1 compute.datumapis.com/instances, 1 compute.datumapis.com/vcpus"},
			wantCond: metav1.Condition{Type: "Granted", Status: metav1.ConditionTrue, Reason: "QuotaAvailable",
				Message: "granted 1 compute.datumapis.com/instances, 1 compute.datumapis.com/vcpus", ObservedGeneration: 2},
			wantAllocs: []quotav1alpha1.RequestAllocation{
				{ResourceType: instances, Status: "Granted", Reason: "QuotaAvailable", AllocatedAmount: 1, AllocatingBucket: "bucket-instances"},
				{ResourceType: vcpus, Status: "Granted", Reason: "QuotaAvailable", AllocatedAmount: 1, AllocatingBucket: "bucket-vcpus"},
			},
		},
		"an exceeded claim denies every request and says which did not fit": {
			d: decision{verdict: exceeded, message: "requested 1 compute.datumapis.com/instances, 0 of 10 available",
				perType: map[string]string{instances: "requested 1 compute.datumapis.com/instances, 0 of 10 available"}, fits: map[string]bool{vcpus: true}},
			wantCond: metav1.Condition{Type: "Granted", Status: metav1.ConditionFalse, Reason: "QuotaExceeded",
				Message: "requested 1 compute.datumapis.com/instances, 0 of 10 available", ObservedGeneration: 2},
			wantAllocs: []quotav1alpha1.RequestAllocation{
				{ResourceType: instances, Status: "Denied", Reason: "QuotaExceeded", Message: "requested 1 compute.datumapis.com/instances, 0 of 10 available"},
				{ResourceType: vcpus, Status: "Denied", Reason: "ClaimDenied", Message: "this request fits, but the claim is denied as a whole because another request exceeds its quota"},
			},
		},
		"a claim without budget stays pending evaluation": {
			d: decision{verdict: noBudget, message: "no grant", perType: map[string]string{instances: "no grant"}},
			wantCond: metav1.Condition{Type: "Granted", Status: metav1.ConditionFalse, Reason: "PendingEvaluation",
				Message: "no grant", ObservedGeneration: 2},
			wantAllocs: []quotav1alpha1.RequestAllocation{
				{ResourceType: instances, Status: "Pending", Reason: "PendingEvaluation", Message: "no grant"},
				{ResourceType: vcpus, Status: "Pending", Reason: "PendingEvaluation"},
			},
		},
		"an invalid claim fails validation": {
			d: decision{verdict: invalid, message: "bad", perType: map[string]string{instances: "bad", vcpus: "bad"}},
			wantCond: metav1.Condition{Type: "Granted", Status: metav1.ConditionFalse, Reason: "ValidationFailed",
				Message: "bad", ObservedGeneration: 2},
			wantAllocs: []quotav1alpha1.RequestAllocation{
				{ResourceType: instances, Status: "Denied", Reason: "ValidationFailed", Message: "bad"},
				{ResourceType: vcpus, Status: "Denied", Reason: "ValidationFailed", Message: "bad"},
			},
		},
	}
	ignoreTime := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".LastTransitionTime" }, cmp.Ignore())
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := claimStatus(claim, tc.d, bucketOf, now)
			if got.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", got.ObservedGeneration)
			}
			c := meta.FindStatusCondition(got.Conditions, "Granted")
			if diff := cmp.Diff(tc.wantCond, *c, ignoreTime); diff != "" {
				t.Errorf("condition mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAllocs, got.Allocations, ignoreTime); diff != "" {
				t.Errorf("allocations mismatch (-want +got):\n%s", diff)
			}
			again := claim.DeepCopy()
			again.Status = got
			again.Status.Conditions[0].LastTransitionTime = earlier
			for i := range again.Status.Allocations {
				again.Status.Allocations[i].LastTransitionTime = earlier
			}
			rewritten := claimStatus(again, tc.d, bucketOf, now)
			if !sameClaimStatus(again.Status, rewritten) {
				t.Errorf("the same decision is not recognised as unchanged")
			}
			if !rewritten.Allocations[0].LastTransitionTime.Equal(&earlier) || !rewritten.Conditions[0].LastTransitionTime.Equal(&earlier) {
				t.Errorf("an unchanged decision moved the transition times")
			}
		})
	}
}

func TestSameFigures(t *testing.T) {
	ts := metav1.Now()
	a := quotav1alpha1.AllowanceBucketStatus{Limit: 10, Allocated: 3, Available: 7, ClaimCount: 3, GrantCount: 1}
	b := a
	b.LastReconciliation = &ts
	b.ContributingGrantRefs = []quotav1alpha1.ContributingGrantRef{}
	if !sameFigures(a, b) {
		t.Errorf("statuses differing only in reconciliation time and empty refs differ")
	}
	b.Allocated = 4
	if sameFigures(a, b) {
		t.Errorf("different allocations compare equal")
	}
}
