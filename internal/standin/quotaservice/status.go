package quotaservice

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/status"
)

// invalidNameChars are the characters a bucket name cannot carry.
var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// bucketName returns the deterministic name of a consumer's bucket for a
// resource type: readable (kind, consumer, last segment of the type) and
// unique (a hash of the full identity), e.g. "project-p1-instances-0a1b2c3d".
func bucketName(c quotav1alpha1.ConsumerRef, resourceType string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{c.APIGroup, c.Kind, c.Namespace, c.Name, resourceType}, "\x00")))
	short := resourceType[strings.LastIndex(resourceType, "/")+1:]
	prefix := invalidNameChars.ReplaceAllString(strings.ToLower(c.Kind+"-"+c.Name+"-"+short), "-")
	const maxPrefix = 200
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return strings.Trim(prefix, "-") + "-" + hex.EncodeToString(sum[:])[:8]
}

// bucketStatus computes a bucket's figures from the ledger and the grants.
func bucketStatus(b *quotav1alpha1.AllowanceBucket, t string, l *ledger, used amounts,
	lim map[string]int64, refs map[string][]quotav1alpha1.ContributingGrantRef,
) quotav1alpha1.AllowanceBucketStatus {
	s := quotav1alpha1.AllowanceBucketStatus{
		ObservedGeneration:    b.Generation,
		Limit:                 lim[t],
		Allocated:             used[t],
		Available:             max(lim[t]-used[t], 0),
		ClaimCount:            l.claimCount(t),
		GrantCount:            int32(len(refs[t])),
		ContributingGrantRefs: refs[t],
	}
	return s
}

// sameFigures reports whether two bucket statuses agree on everything but
// the time of the last reconciliation.
func sameFigures(a, b quotav1alpha1.AllowanceBucketStatus) bool {
	a.LastReconciliation, b.LastReconciliation = nil, nil
	if len(a.ContributingGrantRefs) == 0 {
		a.ContributingGrantRefs = nil
	}
	if len(b.ContributingGrantRefs) == 0 {
		b.ContributingGrantRefs = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

// claimStatus computes the status a claim should have after a decision,
// keeping transition times of what did not change. buckets names the bucket
// of each resource type.
func claimStatus(c *quotav1alpha1.ResourceClaim, d decision, buckets func(string) string, now metav1.Time) quotav1alpha1.ResourceClaimStatus {
	s := quotav1alpha1.ResourceClaimStatus{
		ObservedGeneration: c.Generation,
		Conditions:         slices.Clone(c.Status.Conditions),
	}
	cond := metav1.Condition{
		Type:               quotav1alpha1.ResourceClaimConditionGranted,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: c.Generation,
		Message:            status.Truncate(d.message),
	}
	switch d.verdict {
	case granted:
		cond.Status, cond.Reason = metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable
	case exceeded:
		cond.Reason = quotav1alpha1.ResourceClaimReasonQuotaExceeded
	case noBudget:
		cond.Reason = quotav1alpha1.ResourceClaimReasonPendingEvaluation
	case invalid:
		cond.Reason = quotav1alpha1.ResourceClaimReasonValidationFailed
	}
	status.SetCondition(&s.Conditions, cond, now)

	for _, r := range c.Spec.Requests {
		a := quotav1alpha1.RequestAllocation{ResourceType: r.ResourceType, LastTransitionTime: now}
		switch {
		case d.verdict == granted:
			a.Status, a.Reason, a.AllocatedAmount, a.AllocatingBucket = quotav1alpha1.AllocationGranted,
				quotav1alpha1.ResourceClaimReasonQuotaAvailable, r.Amount, buckets(r.ResourceType)
		case d.verdict == invalid:
			a.Status, a.Reason, a.Message = quotav1alpha1.AllocationDenied, quotav1alpha1.ResourceClaimReasonValidationFailed, d.perType[r.ResourceType]
		case d.verdict == noBudget:
			a.Status, a.Reason, a.Message = quotav1alpha1.AllocationPending, quotav1alpha1.ResourceClaimReasonPendingEvaluation, d.perType[r.ResourceType]
		case d.fits[r.ResourceType]:
			a.Status, a.Reason, a.Message = quotav1alpha1.AllocationDenied, "ClaimDenied",
				"this request fits, but the claim is denied as a whole because another request exceeds its quota"
		default:
			a.Status, a.Reason, a.Message = quotav1alpha1.AllocationDenied, quotav1alpha1.ResourceClaimReasonQuotaExceeded, d.perType[r.ResourceType]
		}
		a.Message = status.Truncate(a.Message)
		if old := findAllocation(c.Status.Allocations, r.ResourceType); old != nil && sameAllocation(*old, a) {
			a.LastTransitionTime = old.LastTransitionTime
		}
		s.Allocations = append(s.Allocations, a)
	}
	return s
}

// grantedStatus is the status of a claim the ledger counts as granted with
// amounts.
func grantedStatus(c *quotav1alpha1.ResourceClaim, a amounts, buckets func(string) string, now metav1.Time) quotav1alpha1.ResourceClaimStatus {
	d := decision{verdict: granted, perType: map[string]string{}, fits: map[string]bool{}}
	parts := make([]string, 0, len(c.Spec.Requests))
	for _, r := range c.Spec.Requests {
		parts = append(parts, formatAmount(a[r.ResourceType], r.ResourceType))
	}
	d.message = "granted " + strings.Join(parts, ", ")
	s := claimStatus(c, d, buckets, now)
	for i := range s.Allocations {
		s.Allocations[i].AllocatedAmount = a[s.Allocations[i].ResourceType]
	}
	return s
}

// sameClaimStatus reports whether two claim statuses say the same, ignoring
// transition times.
func sameClaimStatus(a, b quotav1alpha1.ResourceClaimStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || len(a.Allocations) != len(b.Allocations) {
		return false
	}
	ca := meta.FindStatusCondition(a.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
	cb := meta.FindStatusCondition(b.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
	if ca == nil || cb == nil || !status.SameCondition(*ca, *cb) {
		return false
	}
	for i := range a.Allocations {
		if !sameAllocation(a.Allocations[i], b.Allocations[i]) {
			return false
		}
	}
	return true
}

// sameAllocation compares allocations without their transition times.
func sameAllocation(a, b quotav1alpha1.RequestAllocation) bool {
	a.LastTransitionTime, b.LastTransitionTime = metav1.Time{}, metav1.Time{}
	return a == b
}

// findAllocation returns the allocation of a resource type.
func findAllocation(as []quotav1alpha1.RequestAllocation, t string) *quotav1alpha1.RequestAllocation {
	for i := range as {
		if as[i].ResourceType == t {
			return &as[i]
		}
	}
	return nil
}

// formatAmount renders "<amount> <type>".
func formatAmount(v int64, t string) string {
	return strconv.FormatInt(v, 10) + " " + t
}
