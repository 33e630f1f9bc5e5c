package quotaservice

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	"github.com/citycells/compute/internal/quota"
)

// claimFor builds a claim of consumer kind/name asking amount of each type.
func claimFor(consumerKind string, resourceKind string, types ...string) *quotav1alpha1.ResourceClaim {
	c := &quotav1alpha1.ResourceClaim{Spec: quotav1alpha1.ResourceClaimSpec{
		ConsumerRef: quotav1alpha1.ConsumerRef{APIGroup: quota.ProjectAPIGroup, Kind: consumerKind, Name: "p1"},
		ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: quota.ProjectAPIGroup, Kind: resourceKind, Name: "p1"},
	}}
	for _, t := range types {
		c.Spec.Requests = append(c.Spec.Requests, quotav1alpha1.ResourceRequest{ResourceType: t, Amount: 1})
	}
	return c
}

func TestValidateClaim(t *testing.T) {
	regs := indexRegistrations(ComputeRegistrations())
	tests := map[string]struct {
		claim *quotav1alpha1.ResourceClaim
		want  string
	}{
		"a project claiming compute resources for itself is valid": {
			claim: claimFor("Project", "Project", instances, vcpus, memory),
		},
		"an unregistered resource type is named": {
			claim: claimFor("Project", "Project", instances, "compute.datumapis.com/gpus"),
			want:  "resource type compute.datumapis.com/gpus is not registered",
		},
		"a consumer of the wrong kind is refused": {
			claim: claimFor("Organization", "Project", instances),
			want:  "resource type compute.datumapis.com/instances is consumed by Project.resourcemanager.miloapis.com, not by Organization.resourcemanager.miloapis.com",
		},
		"a resource kind the registration does not list may not claim": {
			claim: claimFor("Project", "Instance", instances),
			want:  "Instance.resourcemanager.miloapis.com may not claim resource type compute.datumapis.com/instances",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := validateClaim(tc.claim, regs); got != tc.want {
				t.Errorf("validateClaim() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIndexRegistrations(t *testing.T) {
	dup := ComputeRegistrations()
	dup = append(dup, dup[0])
	dup[len(dup)-1].Name = "another-instances"
	broken := ComputeRegistrations()
	broken[1].Spec.UnitConversionFactor = 0
	deleting := ComputeRegistrations()
	now := metav1.Now()
	deleting[2].DeletionTimestamp = &now

	tests := map[string]struct {
		regs        []quotav1alpha1.ResourceRegistration
		wantValid   []string
		wantInvalid map[string]string
	}{
		"the compute registrations are all valid": {
			regs: ComputeRegistrations(), wantValid: []string{instances, memory, vcpus},
		},
		"two registrations of one type make the type unusable": {
			regs: dup, wantValid: []string{memory, vcpus},
			wantInvalid: map[string]string{instances: "2 ResourceRegistrations register resource type compute.datumapis.com/instances"},
		},
		"a registration failing validation makes its type unusable": {
			regs: broken, wantValid: []string{instances, memory},
			wantInvalid: map[string]string{vcpus: "spec.unitConversionFactor must be at least 1"},
		},
		"a registration being deleted does not count": {
			regs: deleting, wantValid: []string{instances, vcpus},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := indexRegistrations(tc.regs)
			var valid []string
			for _, t := range []string{instances, memory, vcpus} {
				if _, ok := got.valid[t]; ok {
					valid = append(valid, t)
				}
			}
			if diff := cmp.Diff(tc.wantValid, valid); diff != "" {
				t.Errorf("valid types mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantInvalid, got.invalid, cmp.Transformer("nilIfEmpty", func(m map[string]string) map[string]string {
				if len(m) == 0 {
					return nil
				}
				return m
			})); diff != "" {
				t.Errorf("invalid types mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// grant builds a grant to project p with the given allowances.
func grant(ns, name, consumerKind string, allowances map[string]int64) quotav1alpha1.ResourceGrant {
	g := DefaultGrantFor("p1", name, ns, allowances)
	g.Spec.ConsumerRef.Kind = consumerKind
	g.Generation = 3
	return *g
}

func TestLimits(t *testing.T) {
	regs := indexRegistrations(ComputeRegistrations())
	now := metav1.Now()
	deleted := grant("default", "old", "Project", map[string]int64{instances: 100})
	deleted.DeletionTimestamp = &now
	grants := []quotav1alpha1.ResourceGrant{
		grant("default", "base", "Project", map[string]int64{instances: 10, vcpus: 40000}),
		grant("milo-system", "bonus", "Project", map[string]int64{instances: 5}),
		grant("default", "bad-type", "Project", map[string]int64{instances: 50, "compute.datumapis.com/gpus": 1}),
		grant("default", "bad-kind", "Organization", map[string]int64{instances: 50}),
		deleted,
	}
	lim, refs := limits(grants, regs, "milo-system")
	if diff := cmp.Diff(map[string]int64{instances: 15, vcpus: 40000}, lim); diff != "" {
		t.Errorf("limits mismatch (-want +got):\n%s", diff)
	}
	wantRefs := []quotav1alpha1.ContributingGrantRef{
		{Name: "bonus", LastObservedGeneration: 3, Amount: 5},
		{Name: "default/base", LastObservedGeneration: 3, Amount: 10},
	}
	if diff := cmp.Diff(wantRefs, refs[instances]); diff != "" {
		t.Errorf("contributing grants mismatch (-want +got):\n%s", diff)
	}
	if why := validateGrant(&grants[2], regs); !strings.Contains(why, "gpus is not registered") {
		t.Errorf("validateGrant(bad type) = %q", why)
	}
	if why := validateGrant(&grants[3], regs); !strings.Contains(why, "granted to Project.resourcemanager.miloapis.com, not to Organization") {
		t.Errorf("validateGrant(bad kind) = %q", why)
	}
}
