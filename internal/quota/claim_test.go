package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
)

func TestBuildClaim(t *testing.T) {
	inst := makeInstance("web-dfw-abc12345-0").build()
	got, err := BuildClaim(inst, apitest.StandardInstanceTypes(), Target{Project: "p1", Namespace: "default"}, "cell-dfw")
	if err != nil {
		t.Fatal(err)
	}
	project := quotav1alpha1.ConsumerRef{APIGroup: "resourcemanager.miloapis.com", Kind: "Project", Name: "p1"}
	want := &quotav1alpha1.ResourceClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "quota.miloapis.com/v1alpha1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "instance-web-dfw-abc12345-0",
			Namespace: "default",
			Labels: map[string]string{
				"compute.datumapis.com/instance-namespace": "ns-cell",
				"compute.datumapis.com/source-cluster":     "cell-dfw",
			},
			Annotations: map[string]string{InstanceUIDAnnotation: "uid-web-dfw-abc12345-0"},
		},
		Spec: quotav1alpha1.ResourceClaimSpec{
			ConsumerRef: project,
			Requests: []quotav1alpha1.ResourceRequest{
				{ResourceType: "compute.datumapis.com/instances", Amount: 1},
				{ResourceType: "compute.datumapis.com/vcpus", Amount: 1000},
				{ResourceType: "compute.datumapis.com/memory", Amount: 2048},
			},
			ResourceRef: quotav1alpha1.UnversionedObjectReference{APIGroup: project.APIGroup, Kind: project.Kind, Name: project.Name},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildClaim() mismatch (-want +got):\n%s", diff)
	}
}

func TestInstanceForClaim(t *testing.T) {
	claim := func(name, cell, ns string) *quotav1alpha1.ResourceClaim {
		c := &quotav1alpha1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if cell != "" {
			c.Labels[computev1alpha.SourceClusterLabel] = cell
		}
		if ns != "" {
			c.Labels[computev1alpha.InstanceNamespaceLabel] = ns
		}
		return c
	}
	tests := map[string]struct {
		claim  *quotav1alpha1.ResourceClaim
		want   types.NamespacedName
		wantOK bool
	}{
		"a claim this cell made maps to its instance": {
			claim: claim("instance-web-0", "cell-dfw", "ns-1"), want: types.NamespacedName{Namespace: "ns-1", Name: "web-0"}, wantOK: true,
		},
		"a claim another cell made is ignored":              {claim: claim("instance-web-0", "cell-lhr", "ns-1")},
		"a claim without the instance namespace is ignored": {claim: claim("instance-web-0", "cell-dfw", "")},
		"a claim not named like an instance's is ignored":   {claim: claim("project-quota", "cell-dfw", "ns-1")},
		"a claim named only by the prefix is ignored":       {claim: claim("instance-", "cell-dfw", "ns-1")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := InstanceForClaim(tc.claim, "cell-dfw")
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("InstanceForClaim() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestOwnerOf(t *testing.T) {
	inst := makeInstance("web-0").build()
	claim := func(cell, ns, uid string) *quotav1alpha1.ResourceClaim {
		c := &quotav1alpha1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{computev1alpha.SourceClusterLabel: cell, computev1alpha.InstanceNamespaceLabel: ns},
			Annotations: map[string]string{},
		}}
		if uid != "" {
			c.Annotations[InstanceUIDAnnotation] = uid
		}
		return c
	}
	tests := map[string]struct {
		claim *quotav1alpha1.ResourceClaim
		want  claimOwner
	}{
		"this cell's claim for this instance is the instance's":             {claim: claim("cell-dfw", "ns-cell", "uid-web-0"), want: ownedByInstance},
		"a claim without the uid annotation from this cell is adopted":      {claim: claim("cell-dfw", "ns-cell", ""), want: ownedByInstance},
		"a claim an earlier instance of the name left is the predecessor's": {claim: claim("cell-dfw", "ns-cell", "uid-old"), want: ownedByPredecessor},
		"a claim another cell made belongs to that cell":                    {claim: claim("cell-lhr", "ns-cell", "uid-web-0"), want: ownedByOtherCell},
		"a claim for another cell namespace belongs to someone else":        {claim: claim("cell-dfw", "ns-other", "uid-web-0"), want: ownedByOtherCell},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ownerOf(tc.claim, inst, "cell-dfw"); got != tc.want {
				t.Errorf("ownerOf() = %v, want %v", got, tc.want)
			}
		})
	}
}
