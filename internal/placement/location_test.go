package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
)

// twoDFW binds two ready DFW Locations (dfw-a, dfw-b) and one LHR.
func twoDFW() locations.Cities {
	c := locations.Cities{}
	bind(c, "DFW", "dfw-a", true)
	bind(c, "DFW", "dfw-b", true)
	bind(c, "LHR", "lhr", true)
	return c
}

// located is what a Location test compares of a target.
type located struct {
	City, Location, Reason string
	Desired                bool
}

func locatedOf(ts []Target) []located {
	var out []located
	for _, t := range ts {
		l := located{City: t.CityCode, Reason: t.Reason, Desired: t.Desired != nil}
		if t.Location != nil {
			l.Location = t.Location.Name
		}
		out = append(out, l)
	}
	return out
}

func TestTargetsByLocation(t *testing.T) {
	const uid = types.UID("u-1")
	placed := func(mutate func(p *computev1alpha.WorkloadPlacement)) *computev1alpha.Workload {
		w := makeWorkload("web", uid).withPlacement("edge", 1).build()
		mutate(&w.Spec.Placements[0])
		return w
	}
	tests := map[string]struct {
		workload *computev1alpha.Workload
		want     []located
	}{
		"named Locations each get a deployment; an unbound name says so": {
			workload: placed(func(p *computev1alpha.WorkloadPlacement) {
				p.Locations = []computev1alpha.PlacementLocation{{Name: "lhr"}, {Name: "dfw-b"}, {Name: "gcp-us-south1-a"}}
			}),
			want: []located{
				{Location: "gcp-us-south1-a", Reason: computev1alpha.ReasonLocationNotBound},
				{City: "DFW", Location: "dfw-b", Desired: true},
				{City: "LHR", Location: "lhr", Desired: true},
			},
		},
		"a city-code selector reaches both Locations of the city": {
			workload: placed(func(p *computev1alpha.WorkloadPlacement) {
				p.LocationSelector = &metav1.LabelSelector{MatchLabels: map[string]string{computev1alpha.CityCodeTopologyLabel: "DFW"}}
			}),
			want: []located{{City: "DFW", Location: "dfw-a", Desired: true}, {City: "DFW", Location: "dfw-b", Desired: true}},
		},
		"deprecated cityCodes place like the selector they are rewritten into": {
			workload: makeWorkload("web", uid).withPlacement("edge", 1, "LHR", "DFW", "SIN").build(),
			want: []located{
				{City: "DFW", Location: "dfw-a", Desired: true},
				{City: "DFW", Location: "dfw-b", Desired: true},
				{City: "LHR", Location: "lhr", Desired: true},
				{City: "SIN", Reason: computev1alpha.ReasonLocationNotBound},
			},
		},
		"a selector on another topology key selects by it": {
			workload: placed(func(p *computev1alpha.WorkloadPlacement) {
				p.LocationSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "topology.datum.net/region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"r-DFW"}}}}
			}),
			want: []located{{City: "LHR", Location: "lhr", Desired: true}},
		},
		"an empty selector selects nothing (admission refuses it)": {
			workload: placed(func(p *computev1alpha.WorkloadPlacement) { p.LocationSelector = &metav1.LabelSelector{} }),
		},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			got := locatedOf(Expand(tc.workload, Targets(tc.workload, twoDFW(), nil), nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("targets mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTwoLocationsOfACityAreTwoDeployments(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 2, "DFW").build()
	ts := Expand(w, Targets(w, twoDFW(), nil), nil)
	if len(ts) != 2 || ts[0].Name == ts[1].Name {
		t.Fatalf("targets = %+v, want two differently named deployments", locatedOf(ts))
	}
	for _, tg := range ts {
		if tg.Desired.Spec.LocationRef == nil || tg.Desired.Spec.LocationRef.Name != tg.Location.Name ||
			tg.Desired.Labels[computev1alpha.LocationTopologyLabel] != tg.Location.Name || tg.Desired.Spec.CityCode != "DFW" {
			t.Errorf("deployment %s carries location %v, label %q, city %q; want its Location and DFW",
				tg.Name, tg.Desired.Spec.LocationRef, tg.Desired.Labels[computev1alpha.LocationTopologyLabel], tg.Desired.Spec.CityCode)
		}
	}
}

// TestDeploymentsFromBeforeLocationsAreAdopted: a Workload deployed by a
// release that placed by city keeps its deployment (same name, updated to
// carry its Location); only the city's second Location gets a new one.
func TestDeploymentsFromBeforeLocationsAreAdopted(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 2, "DFW").build()
	legacy := Desired(w, &w.Spec.Placements[0], &Target{
		Placement: "edge", CityCode: "DFW", Name: names.WorkloadDeploymentName("web", "u-1", "edge", "DFW"),
	}, &w.Spec.Template)
	legacy.Spec.LocationRef = nil
	delete(legacy.Labels, computev1alpha.LocationTopologyLabel)

	cities := locations.Cities{}
	bind(cities, "DFW", "dfw-b", true)
	bind(cities, "DFW", "dfw-a", false) // dfw-b serves DFW: it adopts
	plan := Diff(w, Expand(w, Targets(w, cities, []computev1alpha.WorkloadDeployment{*legacy}), nil), []computev1alpha.WorkloadDeployment{*legacy})
	if len(plan.Delete) != 0 || len(plan.Create) != 0 {
		t.Fatalf("plan creates %v and deletes %v; an upgrade must neither (dfw-a is not ready)", namesOf(plan.Create), namesOf(plan.Delete))
	}
	if len(plan.Update) != 1 || plan.Update[0].Name != legacy.Name || plan.Update[0].Spec.LocationRef.Name != "dfw-b" {
		t.Fatalf("update = %v, want %s adopted by dfw-b", plan.Update, legacy.Name)
	}

	// Once adopted, it stays dfw-b's; dfw-a, now ready, gets a new one.
	adopted := plan.Update[0]
	cities = twoDFW()
	plan = Diff(w, Expand(w, Targets(w, cities, []computev1alpha.WorkloadDeployment{*adopted}), nil), []computev1alpha.WorkloadDeployment{*adopted})
	if len(plan.Delete) != 0 || len(plan.Update) != 0 || len(plan.Create) != 1 || plan.Create[0].Spec.LocationRef.Name != "dfw-a" {
		t.Fatalf("plan = create %v update %v delete %v, want only dfw-a created", namesOf(plan.Create), namesOf(plan.Update), namesOf(plan.Delete))
	}
}

func TestCityCodesSelector(t *testing.T) {
	got := CityCodesSelector([]string{"LHR", "DFW", "LHR"})
	want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: computev1alpha.CityCodeTopologyLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"DFW", "LHR"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("CityCodesSelector mismatch (-want +got):\n%s", diff)
	}
	if codes := locations.SelectedCityCodes(got); !cmp.Equal(codes, []string{"DFW", "LHR"}) {
		t.Fatalf("SelectedCityCodes = %v", codes)
	}
}

func TestRewriteCityCodes(t *testing.T) {
	dfw := CityCodesSelector([]string{"DFW"})
	region := &metav1.LabelSelector{MatchLabels: map[string]string{"topology.datum.net/region": "us"}}
	tests := map[string]struct {
		in        computev1alpha.WorkloadPlacement
		rewritten bool
		want      *metav1.LabelSelector
	}{
		"cityCodes become the selector": {
			in: computev1alpha.WorkloadPlacement{CityCodes: []string{"LHR", "DFW"}}, rewritten: true, want: CityCodesSelector([]string{"DFW", "LHR"}),
		},
		"cityCodes written over a rewritten selector replace it": {
			in: computev1alpha.WorkloadPlacement{CityCodes: []string{"SIN"}, LocationSelector: dfw}, rewritten: true, want: CityCodesSelector([]string{"SIN"}),
		},
		"cityCodes beside another selector are left for validation": {
			in: computev1alpha.WorkloadPlacement{CityCodes: []string{"SIN"}, LocationSelector: region}, want: region,
		},
		"malformed codes are left for validation": {
			in: computev1alpha.WorkloadPlacement{CityCodes: []string{"dfw"}},
		},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			p := tc.in
			if got := RewriteCityCodes(&p); got != tc.rewritten {
				t.Fatalf("RewriteCityCodes() = %v, want %v", got, tc.rewritten)
			}
			if diff := cmp.Diff(tc.want, p.LocationSelector); diff != "" {
				t.Fatalf("selector mismatch (-want +got):\n%s", diff)
			}
			if tc.rewritten && p.CityCodes != nil {
				t.Fatalf("cityCodes %v kept after the rewrite", p.CityCodes)
			}
		})
	}
}
