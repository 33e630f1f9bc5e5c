package locations

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
)

type locationBuilder struct{ networkingv1alpha.Location }

func makeLocation(name, city string) *locationBuilder {
	l := &locationBuilder{}
	l.Name, l.Namespace = name, "datum-locations"
	l.Spec.LocationClassName = networkingv1alpha.LocationClassDatumManaged
	l.Spec.Topology = map[string]string{}
	if city != "" {
		l.Spec.Topology[networkingv1alpha.CityCodeTopologyKey] = city
	}
	return l
}

func (l *locationBuilder) ready() *locationBuilder {
	return l.withReady(metav1.ConditionTrue, "Ready", "")
}

func (l *locationBuilder) withReady(status metav1.ConditionStatus, reason, message string) *locationBuilder {
	l.Status.Conditions = append(l.Status.Conditions, metav1.Condition{
		Type: networkingv1alpha.LocationConditionReady, Status: status, Reason: reason, Message: message,
	})
	return l
}

func (l *locationBuilder) build() networkingv1alpha.Location { return l.Location }

func makeBinding(name, location string) networkingv1alpha.LocationBinding {
	b := networkingv1alpha.LocationBinding{}
	b.Name, b.Namespace = name, "default"
	b.Spec.LocationRef = networkingv1alpha.LocationReference{Namespace: "datum-locations", Name: location}
	return b
}

func ref(name string) networkingv1alpha.LocationReference {
	return networkingv1alpha.LocationReference{Namespace: "datum-locations", Name: name}
}

func TestResolve(t *testing.T) {
	deleting := makeBinding("b-lhr", "lhr-1")
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"x"}

	tests := map[string]struct {
		bindings  []networkingv1alpha.LocationBinding
		locations []networkingv1alpha.Location
		want      Cities
	}{
		"a binding to a ready location binds its city": {
			bindings:  []networkingv1alpha.LocationBinding{makeBinding("b", "dfw-1")},
			locations: []networkingv1alpha.Location{makeLocation("dfw-1", "DFW").ready().build()},
			want:      Cities{"DFW": {Code: "DFW", Location: ref("dfw-1"), Ready: true}},
		},
		"a location without a binding binds nothing": {
			locations: []networkingv1alpha.Location{makeLocation("dfw-1", "DFW").ready().build()},
			want:      Cities{},
		},
		"a binding to a missing location binds nothing": {
			bindings: []networkingv1alpha.LocationBinding{makeBinding("b", "dfw-1")},
			want:     Cities{},
		},
		"a location without a city code binds nothing": {
			bindings:  []networkingv1alpha.LocationBinding{makeBinding("b", "x")},
			locations: []networkingv1alpha.Location{makeLocation("x", "").ready().build()},
			want:      Cities{},
		},
		"a binding being deleted binds nothing": {
			bindings:  []networkingv1alpha.LocationBinding{deleting},
			locations: []networkingv1alpha.Location{makeLocation("lhr-1", "LHR").ready().build()},
			want:      Cities{},
		},
		"a location that is not ready binds its city as not ready, with its message": {
			bindings:  []networkingv1alpha.LocationBinding{makeBinding("b", "sin-1")},
			locations: []networkingv1alpha.Location{makeLocation("sin-1", "SIN").withReady(metav1.ConditionFalse, "Maintenance", "cell drained").build()},
			want: Cities{"SIN": {
				Code: "SIN", Location: ref("sin-1"), Reason: "Maintenance",
				Message: "Location datum-locations/sin-1 serving SIN is not ready: cell drained",
			}},
		},
		"a location that never reported readiness is not ready": {
			bindings:  []networkingv1alpha.LocationBinding{makeBinding("b", "sin-1")},
			locations: []networkingv1alpha.Location{makeLocation("sin-1", "SIN").build()},
			want: Cities{"SIN": {
				Code: "SIN", Location: ref("sin-1"), Reason: "ReadyUnknown",
				Message: "Location datum-locations/sin-1 serving SIN has not reported readiness yet",
			}},
		},
		"a ready location wins over a not ready one in the same city": {
			bindings: []networkingv1alpha.LocationBinding{makeBinding("b1", "dfw-1"), makeBinding("b2", "dfw-2")},
			locations: []networkingv1alpha.Location{
				makeLocation("dfw-1", "DFW").withReady(metav1.ConditionFalse, "Down", "").build(),
				makeLocation("dfw-2", "DFW").ready().build(),
			},
			want: Cities{"DFW": {Code: "DFW", Location: ref("dfw-2"), Ready: true}},
		},
		"of two ready locations in a city the first by name serves it": {
			bindings: []networkingv1alpha.LocationBinding{makeBinding("b2", "dfw-2"), makeBinding("b1", "dfw-1")},
			locations: []networkingv1alpha.Location{
				makeLocation("dfw-2", "DFW").ready().build(),
				makeLocation("dfw-1", "DFW").ready().build(),
			},
			want: Cities{"DFW": {Code: "DFW", Location: ref("dfw-1"), Ready: true}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Resolve(tc.bindings, tc.locations)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(City{}, "Locations")); diff != "" {
				t.Fatalf("Resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveKeepsEveryLocationOfACity: two Locations of one city are two
// places to run, each with its own readiness, listed in a stable order.
func TestResolveKeepsEveryLocationOfACity(t *testing.T) {
	got := Resolve(
		[]networkingv1alpha.LocationBinding{makeBinding("b2", "dfw-2"), makeBinding("b1", "dfw-1"), makeBinding("b3", "lhr-1")},
		[]networkingv1alpha.Location{
			makeLocation("dfw-2", "DFW").ready().build(),
			makeLocation("dfw-1", "DFW").withReady(metav1.ConditionFalse, "Maintenance", "drained").build(),
			makeLocation("lhr-1", "LHR").ready().build(),
		})
	if got["DFW"].Location != ref("dfw-2") || !got["DFW"].Ready {
		t.Fatalf("DFW is served by %v (ready %v), want the ready dfw-2", got["DFW"].Location, got["DFW"].Ready)
	}
	var all []string
	for _, l := range got.All() {
		all = append(all, fmt.Sprintf("%s:%s:%v", l.Ref.Name, l.CityCode, l.Ready))
	}
	want := []string{"dfw-1:DFW:false", "dfw-2:DFW:true", "lhr-1:LHR:true"}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Fatalf("All() mismatch (-want +got):\n%s", diff)
	}
	if d := got.DescribeLocations(); d != "dfw-1, dfw-2, lhr-1" {
		t.Fatalf("DescribeLocations() = %q", d)
	}
}

func TestCitiesDescribe(t *testing.T) {
	tests := map[string]struct {
		cities Cities
		want   string
	}{
		"no cities say none":         {cities: Cities{}, want: "none"},
		"cities are listed in order": {cities: Cities{"LHR": {}, "DFW": {}, "SIN": {}}, want: "DFW, LHR, SIN"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.cities.Describe(); got != tc.want {
				t.Fatalf("Describe() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadSkipsMissingLocations(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := networkingv1alpha.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lhr := makeLocation("lhr-1", "LHR").ready().build()
	b1, b2, other := makeBinding("b1", "lhr-1"), makeBinding("b2", "gone"), makeBinding("b3", "lhr-1")
	other.Namespace = "elsewhere"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&lhr, &b1, &b2, &other).Build()

	got, err := Load(context.Background(), c, "default")
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := Cities{"LHR": {Code: "LHR", Location: ref("lhr-1"), Ready: true}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(City{}, "Locations")); diff != "" {
		t.Fatalf("Load() mismatch (-want +got):\n%s", diff)
	}
}
