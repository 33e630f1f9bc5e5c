package quotaservice

import (
	"fmt"
	"sort"
	"strings"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
)

// registrations indexes the valid registrations by resource type; invalid
// ones map to why they are invalid.
type registrations struct {
	valid   map[string]*quotav1alpha1.ResourceRegistration
	invalid map[string]string
}

// indexRegistrations validates every registration. Two registrations of one
// resource type make the type invalid: no one can tell which rules apply.
func indexRegistrations(regs []quotav1alpha1.ResourceRegistration) registrations {
	out := registrations{valid: map[string]*quotav1alpha1.ResourceRegistration{}, invalid: map[string]string{}}
	count := map[string]int{}
	for i := range regs {
		r := &regs[i]
		if r.DeletionTimestamp != nil {
			continue
		}
		t := r.Spec.ResourceType
		count[t]++
		if msg := validateRegistration(r); msg != "" {
			out.invalid[t] = msg
			continue
		}
		out.valid[t] = r
	}
	for t, n := range count {
		if n > 1 {
			delete(out.valid, t)
			out.invalid[t] = fmt.Sprintf("%d ResourceRegistrations register resource type %s", n, t)
		}
	}
	return out
}

// validateRegistration returns why a registration is unusable, or "".
func validateRegistration(r *quotav1alpha1.ResourceRegistration) string {
	var problems []string
	if r.Spec.ResourceType == "" {
		problems = append(problems, "spec.resourceType is empty")
	}
	if r.Spec.ConsumerTypeRef.Kind == "" {
		problems = append(problems, "spec.consumerTypeRef.kind is empty")
	}
	switch r.Spec.Type {
	case quotav1alpha1.RegistrationTypeEntity, quotav1alpha1.RegistrationTypeAllocation:
	default:
		problems = append(problems, fmt.Sprintf("spec.type %q is neither Entity nor Allocation", r.Spec.Type))
	}
	if r.Spec.UnitConversionFactor < 1 {
		problems = append(problems, "spec.unitConversionFactor must be at least 1")
	}
	return strings.Join(problems, "; ")
}

// registrationFor returns the valid registration of a resource type, or why
// there is none.
func (rs registrations) registrationFor(t string) (*quotav1alpha1.ResourceRegistration, string) {
	if r, ok := rs.valid[t]; ok {
		return r, ""
	}
	if msg, ok := rs.invalid[t]; ok {
		return nil, fmt.Sprintf("resource type %s is not usable: %s", t, msg)
	}
	return nil, fmt.Sprintf("resource type %s is not registered", t)
}

// consumerMatches reports whether a consumer is of the kind a registration
// grants to.
func consumerMatches(r *quotav1alpha1.ResourceRegistration, c quotav1alpha1.ConsumerRef) bool {
	return r.Spec.ConsumerTypeRef.APIGroup == c.APIGroup && r.Spec.ConsumerTypeRef.Kind == c.Kind
}

// registrationForConsumer returns the registration of resource type t, or
// nil when there is none usable, and why consumer may not have t: t is not
// registered or not usable, or it is for another kind of consumer, said
// with mismatch ("consumed by %s, not by %s": the registration's consumer
// kind, then consumer's).
func (rs registrations) registrationForConsumer(t string, consumer quotav1alpha1.ConsumerRef, mismatch string) (*quotav1alpha1.ResourceRegistration, string) {
	r, why := rs.registrationFor(t)
	if r == nil {
		return nil, why
	}
	if !consumerMatches(r, consumer) {
		return r, fmt.Sprintf("resource type %s is "+mismatch, t,
			groupKind(r.Spec.ConsumerTypeRef.APIGroup, r.Spec.ConsumerTypeRef.Kind), groupKind(consumer.APIGroup, consumer.Kind))
	}
	return r, ""
}

// validateClaim returns why a claim cannot be evaluated, or "": every
// requested resource type must be registered, paid for by the claim's
// consumer kind, and claimable by the claim's resource kind.
func validateClaim(c *quotav1alpha1.ResourceClaim, rs registrations) string {
	var problems []string
	for _, req := range c.Spec.Requests {
		r, why := rs.registrationForConsumer(req.ResourceType, c.Spec.ConsumerRef, "consumed by %s, not by %s")
		if why != "" {
			problems = append(problems, why)
		}
		if r != nil && !claimable(r, c.Spec.ResourceRef) {
			problems = append(problems, fmt.Sprintf("%s may not claim resource type %s",
				groupKind(c.Spec.ResourceRef.APIGroup, c.Spec.ResourceRef.Kind), req.ResourceType))
		}
	}
	return strings.Join(problems, "; ")
}

// claimable reports whether a registration lets objects of ref's kind claim.
func claimable(r *quotav1alpha1.ResourceRegistration, ref quotav1alpha1.UnversionedObjectReference) bool {
	for _, cr := range r.Spec.ClaimingResources {
		if cr.APIGroup == ref.APIGroup && cr.Kind == ref.Kind {
			return true
		}
	}
	return false
}

// validateGrant returns why a grant cannot count, or "": every allowance
// must be for a registered resource type its consumer kind may receive.
func validateGrant(g *quotav1alpha1.ResourceGrant, rs registrations) string {
	var problems []string
	for _, a := range g.Spec.Allowances {
		if _, why := rs.registrationForConsumer(a.ResourceType, g.Spec.ConsumerRef, "granted to %s, not to %s"); why != "" {
			problems = append(problems, why)
		}
	}
	return strings.Join(problems, "; ")
}

// limits sums the valid, live grants by resource type and lists, per type,
// the grants that contribute (sorted by name).
func limits(grants []quotav1alpha1.ResourceGrant, rs registrations, bucketNamespace string) (map[string]int64, map[string][]quotav1alpha1.ContributingGrantRef) {
	lim := map[string]int64{}
	refs := map[string][]quotav1alpha1.ContributingGrantRef{}
	for i := range grants {
		g := &grants[i]
		if g.DeletionTimestamp != nil || validateGrant(g, rs) != "" {
			continue
		}
		perType := map[string]int64{}
		for _, a := range g.Spec.Allowances {
			for _, b := range a.Buckets {
				perType[a.ResourceType] += b.Amount
			}
		}
		name := g.Name
		if g.Namespace != bucketNamespace {
			name = g.Namespace + "/" + g.Name
		}
		for t, v := range perType {
			lim[t] += v
			refs[t] = append(refs[t], quotav1alpha1.ContributingGrantRef{Name: name, LastObservedGeneration: g.Generation, Amount: v})
		}
	}
	for t := range refs {
		sort.Slice(refs[t], func(i, j int) bool { return refs[t][i].Name < refs[t][j].Name })
	}
	return lim, refs
}

// groupKind renders a kind with its group, e.g. "Project.resourcemanager.miloapis.com".
func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
