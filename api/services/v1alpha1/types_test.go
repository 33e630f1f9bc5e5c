package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// when is a JSON-stable timestamp (RFC 3339 keeps seconds only).
var when = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func fullServiceEntitlement() *ServiceEntitlement {
	return &ServiceEntitlement{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", Generation: 1},
		Spec: ServiceEntitlementSpec{
			ServiceRef:     ServiceRef{Name: "compute.datumapis.com"},
			RequestMessage: "please",
		},
		Status: ServiceEntitlementStatus{
			ObservedGeneration: 1,
			Phase:              EntitlementPhaseActive,
			Conditions: []metav1.Condition{{
				Type: ServiceEntitlementConditionReady, Status: metav1.ConditionTrue, Reason: "Active", LastTransitionTime: when,
			}},
		},
	}
}

// fixtures holds one fully populated object per kind, keyed by kind.
func fixtures() map[string]runtime.Object {
	return map[string]runtime.Object{
		ServiceEntitlementKind:          fullServiceEntitlement(),
		ServiceEntitlementKind + "List": &ServiceEntitlementList{Items: []ServiceEntitlement{*fullServiceEntitlement()}},
	}
}

func TestEveryKindSurvivesAJSONRoundTrip(t *testing.T) {
	for kind, obj := range fixtures() {
		t.Run(kind, func(t *testing.T) {
			data, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
			if err := json.Unmarshal(data, got); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if diff := cmp.Diff(obj, got); diff != "" {
				t.Errorf("round trip changed the object (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTheSchemeKnowsEveryKindAndRoundTripsIt(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	codecs := serializer.NewCodecFactory(s)
	for kind, obj := range fixtures() {
		t.Run(kind, func(t *testing.T) {
			gvk := GroupVersion.WithKind(kind)
			if !s.Recognizes(gvk) {
				t.Fatalf("scheme does not recognize %s", gvk)
			}
			gvks, _, err := s.ObjectKinds(obj)
			if err != nil || len(gvks) != 1 || gvks[0] != gvk {
				t.Fatalf("ObjectKinds = %v, %v; want [%s]", gvks, err, gvk)
			}
			data, err := runtime.Encode(codecs.LegacyCodec(GroupVersion), obj)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, gotGVK, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if *gotGVK != gvk {
				t.Errorf("decoded kind = %s, want %s", gotGVK, gvk)
			}
			// The decoded object carries apiVersion/kind; the fixture does not.
			got.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			if diff := cmp.Diff(obj, got); diff != "" {
				t.Errorf("scheme round trip changed the object (-want +got):\n%s", diff)
			}
		})
	}
}
