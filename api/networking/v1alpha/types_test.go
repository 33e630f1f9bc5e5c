package v1alpha

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

func fullLocation() *Location {
	return &Location{
		ObjectMeta: metav1.ObjectMeta{Name: "dfw", Namespace: "datum-system"},
		Spec: LocationSpec{
			LocationClassName: LocationClassDatumManaged,
			Topology:          map[string]string{CityCodeTopologyKey: "DFW"},
			Provider:          LocationProvider{GCP: &GCPLocationProvider{ProjectID: "p", Region: "us-south1", Zone: "us-south1-a"}},
		},
		Status: LocationStatus{Conditions: []metav1.Condition{{
			Type: LocationConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: when,
		}}},
	}
}

func fullLocationBinding() *LocationBinding {
	return &LocationBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dfw", Namespace: "default"},
		Spec:       LocationBindingSpec{LocationRef: LocationReference{Name: "dfw", Namespace: "datum-system"}},
		Status: LocationBindingStatus{Conditions: []metav1.Condition{{
			Type: LocationBindingConditionReady, Status: metav1.ConditionTrue, Reason: "Bound", LastTransitionTime: when,
		}}},
	}
}

func ready(reason string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: when}}
}

func fullNetworkBinding() *NetworkBinding {
	return &NetworkBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0-net0", Namespace: "default"},
		Spec: NetworkBindingSpec{
			Network:  NetworkRef{Name: "default", Namespace: "default"},
			Topology: map[string]string{CityCodeTopologyKey: "DFW"},
		},
		Status: NetworkBindingStatus{
			NetworkContextRef: &NetworkContextRef{Namespace: "default", Name: "default-dfw"},
			Addresses:         []NetworkBindingAddress{{Family: IPv4Protocol, Address: "10.128.0.2", Gateway: "10.128.0.1", Subnet: "default-dfw"}},
			Conditions:        ready(NetworkBindingReasonBound),
		},
	}
}

func fullNetworkContext() *NetworkContext {
	return &NetworkContext{
		ObjectMeta: metav1.ObjectMeta{Name: "default-dfw", Namespace: "default"},
		Spec:       NetworkContextSpec{Network: LocalNetworkRef{Name: "default"}, Topology: map[string]string{CityCodeTopologyKey: "DFW"}},
		Status:     NetworkContextStatus{Conditions: ready("Ready")},
	}
}

func fullSubnetClaim() *SubnetClaim {
	start, prefix := "10.128.0.0", int32(24)
	return &SubnetClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-dfw", Namespace: "default"},
		Spec: SubnetClaimSpec{
			SubnetClass: "private", NetworkContext: LocalNetworkContextRef{Name: "default-dfw"},
			Location: LocationReference{Name: "dfw", Namespace: "datum-system"}, IPFamily: IPv4Protocol,
			StartAddress: &start, PrefixLength: &prefix,
		},
		Status: SubnetClaimStatus{SubnetRef: &LocalSubnetReference{Name: "default-dfw"}, StartAddress: &start, PrefixLength: &prefix, Conditions: ready("Ready")},
	}
}

func fullSubnet() *Subnet {
	start, prefix := "10.128.0.0", int32(24)
	return &Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: "default-dfw", Namespace: "default"},
		Spec: SubnetSpec{
			SubnetClass: "private", NetworkContext: LocalNetworkContextRef{Name: "default-dfw"},
			Location: LocationReference{Name: "dfw", Namespace: "datum-system"}, IPFamily: IPv4Protocol,
			StartAddress: start, PrefixLength: prefix,
		},
		Status: SubnetStatus{StartAddress: &start, PrefixLength: &prefix, Conditions: ready("Ready")},
	}
}

// fixtures holds one fully populated object per kind, keyed by kind.
func fixtures() map[string]runtime.Object {
	return map[string]runtime.Object{
		LocationKind:                 fullLocation(),
		LocationKind + "List":        &LocationList{Items: []Location{*fullLocation()}},
		LocationBindingKind:          fullLocationBinding(),
		LocationBindingKind + "List": &LocationBindingList{Items: []LocationBinding{*fullLocationBinding()}},
		NetworkBindingKind:           fullNetworkBinding(),
		NetworkBindingKind + "List":  &NetworkBindingList{Items: []NetworkBinding{*fullNetworkBinding()}},
		NetworkContextKind:           fullNetworkContext(),
		NetworkContextKind + "List":  &NetworkContextList{Items: []NetworkContext{*fullNetworkContext()}},
		SubnetClaimKind:              fullSubnetClaim(),
		SubnetClaimKind + "List":     &SubnetClaimList{Items: []SubnetClaim{*fullSubnetClaim()}},
		SubnetKind:                   fullSubnet(),
		SubnetKind + "List":          &SubnetList{Items: []Subnet{*fullSubnet()}},
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
