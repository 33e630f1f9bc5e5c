package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
)

// workloadBuilder builds Workloads for tests.
type workloadBuilder struct{ computev1alpha.Workload }

func makeWorkload(name string, uid types.UID) *workloadBuilder {
	w := &workloadBuilder{}
	w.Name, w.Namespace, w.UID, w.Generation = name, "default", uid, 1
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "nginx"}},
	}
	return w
}

func (w *workloadBuilder) withPlacement(name string, min int32, cities ...string) *workloadBuilder {
	w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{
		Name:      name,
		CityCodes: cities,
		ScaleSettings: computev1alpha.HorizontalScaleSettings{
			MinReplicas:              min,
			InstanceManagementPolicy: computev1alpha.OrderedReadyInstanceManagementPolicy,
		},
	})
	return w
}

func (w *workloadBuilder) withImage(image string) *workloadBuilder {
	w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = image
	return w
}

func (w *workloadBuilder) build() *computev1alpha.Workload { return w.DeepCopy() }

// readyCities binds one ready Location per city, named like the city
// (lower case) in namespace "l".
func readyCities(codes ...string) locations.Cities {
	c := locations.Cities{}
	for _, code := range codes {
		bind(c, code, strings.ToLower(code), true)
	}
	return c
}

// bind binds Location l/name serving city code to c.
func bind(c locations.Cities, code, name string, ready bool) {
	l := locations.Location{
		Ref:      networkingv1alpha.LocationReference{Namespace: "l", Name: name},
		CityCode: code,
		Topology: map[string]string{computev1alpha.CityCodeTopologyLabel: code, "topology.datum.net/region": "r-" + code},
		Ready:    ready,
	}
	if !ready {
		l.Reason, l.Message = "Down", "Location l/"+name+" serving "+code+" is not ready"
	}
	c.Bind(l)
}

func (c cityList) notReady(code string) cityList {
	bind(c.Cities, code, strings.ToLower(code), false)
	return c
}

type cityList struct{ locations.Cities }

// summary is what a test compares of a target.
type summary struct {
	Placement, City, Name, Reason string
	Desired, Keep                 bool
}

func summarize(ts []Target) []summary {
	var out []summary
	for _, t := range ts {
		out = append(out, summary{t.Placement, t.CityCode, t.Name, t.Reason, t.Desired != nil, t.KeepExisting})
	}
	return out
}

func TestExpand(t *testing.T) {
	const uid = types.UID("u-1")
	name := func(p, c string) string {
		return names.LocationDeploymentName("web", uid, p, c, "l", strings.ToLower(c))
	}
	tests := map[string]struct {
		workload *computev1alpha.Workload
		cities   locations.Cities
		want     []summary
	}{
		"every bound city of every placement gets a deployment, sorted": {
			workload: makeWorkload("web", uid).withPlacement("edge", 1, "LHR", "DFW").withPlacement("core", 2, "SIN").build(),
			cities:   readyCities("DFW", "LHR", "SIN"),
			want: []summary{
				{Placement: "core", City: "SIN", Name: name("core", "SIN"), Desired: true},
				{Placement: "edge", City: "DFW", Name: name("edge", "DFW"), Desired: true},
				{Placement: "edge", City: "LHR", Name: name("edge", "LHR"), Desired: true},
			},
		},
		"an unbound city gets no deployment and says why": {
			workload: makeWorkload("web", uid).withPlacement("edge", 1, "DFW", "XYZ").build(),
			cities:   readyCities("DFW"),
			want: []summary{
				{Placement: "edge", City: "DFW", Name: name("edge", "DFW"), Desired: true},
				{Placement: "edge", City: "XYZ", Name: names.WorkloadDeploymentName("web", uid, "edge", "XYZ"), Reason: computev1alpha.ReasonLocationNotBound},
			},
		},
		"a city whose location is not ready keeps an existing deployment but gets no new one": {
			workload: makeWorkload("web", uid).withPlacement("edge", 1, "DFW").build(),
			cities:   cityList{locations.Cities{}}.notReady("DFW").Cities,
			want: []summary{
				{Placement: "edge", City: "DFW", Name: name("edge", "DFW"), Reason: computev1alpha.ReasonLocationNotReady, Desired: true, Keep: true},
			},
		},
		"a city listed twice in a placement is expanded once": {
			workload: makeWorkload("web", uid).withPlacement("edge", 1, "DFW", "DFW").build(),
			cities:   readyCities("DFW"),
			want:     []summary{{Placement: "edge", City: "DFW", Name: name("edge", "DFW"), Desired: true}},
		},
		"the same city in two placements gets two deployments": {
			workload: makeWorkload("web", uid).withPlacement("a", 1, "DFW").withPlacement("b", 1, "DFW").build(),
			cities:   readyCities("DFW"),
			want: []summary{
				{Placement: "a", City: "DFW", Name: name("a", "DFW"), Desired: true},
				{Placement: "b", City: "DFW", Name: name("b", "DFW"), Desired: true},
			},
		},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			got := summarize(expand(tc.workload, tc.cities))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Expand() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpandUnboundMessageListsBoundCities(t *testing.T) {
	w := makeWorkload("web", "u").withPlacement("edge", 1, "XYZ").build()
	got := expand(w, readyCities("LHR", "DFW"))
	want := "city XYZ is not bound to this project (no LocationBinding in namespace default); bound cities: DFW, LHR"
	if got[0].Message != want {
		t.Fatalf("message = %q, want %q", got[0].Message, want)
	}
}

func TestDesiredDeployment(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 3, "DFW").build()
	w.Spec.Placements[0].RolloutStrategy = &computev1alpha.RolloutStrategy{MaxUnavailable: ptr.To[int32](2)}
	wd := expand(w, readyCities("DFW"))[0].Desired

	wantLabels := map[string]string{
		computev1alpha.WorkloadUIDLabel:      "u-1",
		computev1alpha.WorkloadNameLabel:     "web",
		computev1alpha.PlacementNameLabel:    "edge",
		computev1alpha.CityCodeLabel:         "DFW",
		computev1alpha.CityCodeTopologyLabel: "DFW",
		computev1alpha.LocationTopologyLabel: "dfw",
	}
	if diff := cmp.Diff(wantLabels, wd.Labels); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}
	ref := metav1.GetControllerOf(wd)
	if ref == nil || ref.UID != "u-1" || ref.Kind != "Workload" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller reference = %+v, want the Workload blocking owner deletion", ref)
	}
	wantSpec := computev1alpha.WorkloadDeploymentSpec{
		WorkloadRef:     computev1alpha.WorkloadReference{Name: "web", UID: "u-1"},
		PlacementName:   "edge",
		CityCode:        "DFW",
		LocationRef:     &computev1alpha.LocationReference{Namespace: "l", Name: "dfw"},
		Template:        w.Spec.Template,
		ScaleSettings:   w.Spec.Placements[0].ScaleSettings,
		RolloutStrategy: w.Spec.Placements[0].RolloutStrategy,
	}
	if diff := cmp.Diff(wantSpec, wd.Spec); diff != "" {
		t.Errorf("spec mismatch (-want +got):\n%s", diff)
	}
	// The deployment must not alias the Workload.
	wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "changed"
	if w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image == "changed" {
		t.Error("the desired deployment shares its template with the Workload")
	}
}

func TestCityRestart(t *testing.T) {
	const (
		early = "2026-01-01T00:00:00Z"
		late  = "2026-02-01T00:00:00Z"
	)
	tests := map[string]struct {
		workloadRestart string // template restartedAt
		cityRestart     string // Workload annotation restartedAt.DFW
		city            string
		want            string
	}{
		"a city restart sets that city's restartedAt": {
			cityRestart: late, city: "DFW", want: late,
		},
		"a city restart leaves other cities alone": {
			cityRestart: late, city: "LHR", want: "",
		},
		"a later city restart wins over the workload's": {
			workloadRestart: early, cityRestart: late, city: "DFW", want: late,
		},
		"a later workload restart wins over the city's": {
			workloadRestart: late, cityRestart: early, city: "DFW", want: late,
		},
		"an unparsable city restart is ignored": {
			workloadRestart: early, cityRestart: "yesterday", city: "DFW", want: early,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW", "LHR").build()
			if tc.workloadRestart != "" {
				w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: tc.workloadRestart}
			}
			w.Annotations = map[string]string{computev1alpha.CityRestartedAtAnnotationPrefix + "DFW": tc.cityRestart}
			tpl := CityTemplate(w, &w.Spec.Template, tc.city)
			if got := tpl.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]; got != tc.want {
				t.Fatalf("restartedAt = %q, want %q", got, tc.want)
			}
			if got := w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]; got != tc.workloadRestart {
				t.Fatalf("the Workload's own template changed to %q", got)
			}
		})
	}
}

// expand is Expand of every target of w, every city on the Workload's
// template.
func expand(w *computev1alpha.Workload, cities locations.Cities) []Target {
	return Expand(w, Targets(w, cities, nil), nil)
}

func TestExpandBuildsEachCityOnTheRevisionItRuns(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 2, "DFW", "LHR").withImage("app:2").build()
	old := w.Spec.Template.DeepCopy()
	old.Spec.Runtime.Sandbox.Containers[0].Image = "app:1"
	targets := Targets(w, readyCities("DFW", "LHR"), nil)
	for _, tg := range targets {
		if tg.Desired != nil {
			t.Fatalf("Targets built a deployment for %s", tg.CityCode)
		}
	}
	asked := 0
	got := Expand(w, targets, func(t *Target) Revision {
		asked++
		if t.CityCode == "LHR" {
			return Revision{Template: old, Annotations: map[string]string{"rev": "1"}}
		}
		return Revision{}
	})
	if asked != 2 {
		t.Fatalf("revisionOf asked %d times, want once per bound city", asked)
	}
	if img := got[0].Desired.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image; img != "app:2" || got[0].Desired.Annotations != nil {
		t.Errorf("DFW runs %s with %v, want the Workload's template (app:2) and no annotations", img, got[0].Desired.Annotations)
	}
	if img := got[1].Desired.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image; img != "app:1" || got[1].Desired.Annotations["rev"] != "1" {
		t.Errorf("LHR runs %s with %v, want the revision's template (app:1) and its annotations", img, got[1].Desired.Annotations)
	}
	got[0].Desired.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "changed"
	if w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image != "app:2" {
		t.Error("a built deployment shares its template with the Workload")
	}
}
