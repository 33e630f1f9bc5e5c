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

var project = ConsumerRef{APIGroup: "resourcemanager.miloapis.com", Kind: "Project", Name: "p1"}

func fullResourceClaim() *ResourceClaim {
	return &ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "instance-web-dfw-0", Namespace: "default", Generation: 2},
		Spec: ResourceClaimSpec{
			ConsumerRef: project,
			Requests: []ResourceRequest{
				{ResourceType: "example.com/instances", Amount: 1},
				{ResourceType: "example.com/vcpus", Amount: 1000},
			},
			ResourceRef: UnversionedObjectReference{APIGroup: "resourcemanager.miloapis.com", Kind: "Project", Name: "p1"},
		},
		Status: ResourceClaimStatus{
			ObservedGeneration: 2,
			Allocations: []RequestAllocation{{
				ResourceType: "example.com/instances", Status: AllocationGranted, Reason: ResourceClaimReasonQuotaAvailable,
				Message: "allocated", AllocatedAmount: 1, AllocatingBucket: "b1", LastTransitionTime: when,
			}},
			Conditions: []metav1.Condition{{
				Type: ResourceClaimConditionGranted, Status: metav1.ConditionTrue, ObservedGeneration: 2,
				Reason: ResourceClaimReasonQuotaAvailable, Message: "granted", LastTransitionTime: when,
			}},
		},
	}
}

func fullResourceGrant() *ResourceGrant {
	return &ResourceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "p1-compute", Namespace: "default"},
		Spec: ResourceGrantSpec{
			ConsumerRef: project,
			Allowances:  []Allowance{{ResourceType: "example.com/instances", Buckets: []Bucket{{Amount: 10}, {Amount: 5}}}},
		},
		Status: ResourceGrantStatus{
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{{
				Type: ResourceGrantConditionActive, Status: metav1.ConditionTrue,
				Reason: ResourceGrantReasonGrantActive, LastTransitionTime: when,
			}},
		},
	}
}

func fullAllowanceBucket() *AllowanceBucket {
	return &AllowanceBucket{
		ObjectMeta: metav1.ObjectMeta{Name: "project-p1-instances", Namespace: "default"},
		Spec:       AllowanceBucketSpec{ConsumerRef: project, ResourceType: "example.com/instances"},
		Status: AllowanceBucketStatus{
			ObservedGeneration: 1, Limit: 15, Allocated: 3, Available: 12, ClaimCount: 3, GrantCount: 1,
			ContributingGrantRefs: []ContributingGrantRef{{Name: "p1-compute", LastObservedGeneration: 1, Amount: 15}},
			LastReconciliation:    &when,
		},
	}
}

func fullResourceRegistration() *ResourceRegistration {
	return &ResourceRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "example-vcpus"},
		Spec: ResourceRegistrationSpec{
			ConsumerTypeRef:      ConsumerTypeRef{APIGroup: "resourcemanager.miloapis.com", Kind: "Project"},
			Type:                 RegistrationTypeAllocation,
			ResourceType:         "example.com/vcpus",
			Description:          "vCPUs of instances",
			BaseUnit:             "millicore",
			DisplayUnit:          "core",
			UnitConversionFactor: 1000,
			ClaimingResources:    []ClaimingResource{{APIGroup: "resourcemanager.miloapis.com", Kind: "Project"}},
		},
		Status: ResourceRegistrationStatus{
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{{
				Type: ResourceRegistrationConditionActive, Status: metav1.ConditionTrue,
				Reason: ResourceRegistrationReasonRegistrationActive, LastTransitionTime: when,
			}},
		},
	}
}

// fixtures holds one fully populated object per kind, keyed by kind.
func fixtures() map[string]runtime.Object {
	return map[string]runtime.Object{
		ResourceClaimKind:                 fullResourceClaim(),
		ResourceClaimKind + "List":        &ResourceClaimList{Items: []ResourceClaim{*fullResourceClaim()}},
		ResourceGrantKind:                 fullResourceGrant(),
		ResourceGrantKind + "List":        &ResourceGrantList{Items: []ResourceGrant{*fullResourceGrant()}},
		AllowanceBucketKind:               fullAllowanceBucket(),
		AllowanceBucketKind + "List":      &AllowanceBucketList{Items: []AllowanceBucket{*fullAllowanceBucket()}},
		ResourceRegistrationKind:          fullResourceRegistration(),
		ResourceRegistrationKind + "List": &ResourceRegistrationList{Items: []ResourceRegistration{*fullResourceRegistration()}},
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
