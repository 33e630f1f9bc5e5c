package quotaservice

import (
	"strings"
	"testing"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/quota"
)

// FuzzValidateClaim feeds arbitrary claims to the claim validation: it
// never panics, accepts exactly the claims whose every request is
// registered, consumed by the claim's consumer kind and claimable by its
// resource kind, and names every unregistered type it refuses.
func FuzzValidateClaim(f *testing.F) {
	f.Add(quota.ProjectAPIGroup, "Project", quota.ProjectAPIGroup, "Project", instances, vcpus)
	f.Add(quota.ProjectAPIGroup, "Organization", quota.ProjectAPIGroup, "Project", memory, memory)
	f.Add("", "", "", "", "", "compute.datumapis.com/gpus")
	f.Add("x", "Project", quota.ProjectAPIGroup, "Workload", "a;b", "\x00")
	regs := ComputeRegistrations()
	rs := indexRegistrations(regs)
	f.Fuzz(func(t *testing.T, consumerGroup, consumerKind, resourceGroup, resourceKind, type1, type2 string) {
		c := &quotav1alpha1.ResourceClaim{Spec: quotav1alpha1.ResourceClaimSpec{
			ConsumerRef: quotav1alpha1.ConsumerRef{APIGroup: consumerGroup, Kind: consumerKind, Name: "p"},
			ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: resourceGroup, Kind: resourceKind, Name: "p"},
			Requests: []quotav1alpha1.ResourceRequest{
				{ResourceType: type1, Amount: 1}, {ResourceType: type2, Amount: 1},
			},
		}}
		got := validateClaim(c, rs)
		valid := true
		for _, req := range c.Spec.Requests {
			r, _ := rs.registrationFor(req.ResourceType)
			switch {
			case r == nil:
				valid = false
				if !strings.Contains(got, req.ResourceType) {
					t.Errorf("unregistered type %q refused without being named: %q", req.ResourceType, got)
				}
			case !consumerMatches(r, c.Spec.ConsumerRef), !claimable(r, c.Spec.ResourceRef):
				valid = false
			}
		}
		if valid != (got == "") {
			t.Errorf("validateClaim(%+v) = %q, want valid=%t", c.Spec, got, valid)
		}
	})
}
