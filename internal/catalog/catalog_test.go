package catalog

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func instanceType(name string, phase computev1alpha.InstanceTypeLifecyclePhase) computev1alpha.InstanceType {
	return computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("2Gi")},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: phase},
		},
	}
}

func TestFind(t *testing.T) {
	c := Catalog{instanceType("datumcloud-d1-standard-4", "Active"), instanceType(DefaultInstanceType, "Active")}
	tests := map[string]struct {
		name string
		want string
	}{
		"a type is found by its name":                     {name: "datumcloud-d1-standard-4", want: "datumcloud-d1-standard-4"},
		"the retired spelling finds Datum's current name": {name: LegacyD1Standard2, want: DefaultInstanceType},
		"an unknown type is not found":                    {name: "datumcloud-d9-huge"},
		"names are case sensitive":                        {name: "DatumCloud-d1-standard-2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ""
			if it := c.Find(tc.name); it != nil {
				got = it.Name
			}
			if got != tc.want {
				t.Errorf("Find(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestNamesOfferEveryTypeButDisabledOnesSorted(t *testing.T) {
	c := Catalog{instanceType("c", "Active"), instanceType("b", "Disabled"), instanceType("a", "Deprecated")}
	if diff := cmp.Diff([]string{"a", "c"}, c.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if got := c.Sorted(); got[0].Name != "a" || got[2].Name != "c" || c[0].Name != "c" {
		t.Errorf("Sorted() = %v and must not reorder the catalog", got)
	}
}

func TestMessagesNameTheReplacement(t *testing.T) {
	tests := map[string]struct{ got, want string }{
		"deprecated with a replacement": {DeprecatedMessage("a", "b"), "InstanceType 'a' is deprecated; please migrate to 'b'."},
		"deprecated alone":              {DeprecatedMessage("a", ""), "InstanceType 'a' is deprecated."},
		"disabled with a replacement":   {DisabledMessage("a", "b"), "InstanceType 'a' is disabled; please update your workload to 'b'."},
		"disabled alone": {DisabledMessage("a", ""),
			"InstanceType 'a' is disabled and lists no replacement; please update your workload to another instance type"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestDecodeReadsTheStandardSet(t *testing.T) {
	data, err := os.ReadFile("../../config/instancetypes/standard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	types, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := types.Find(LegacyD1Standard2); got == nil || got.Name != DefaultInstanceType ||
		got.Spec.Resources.CPU.MilliValue() != 1000 || got.Spec.Resources.Memory.Value() != 2<<30 {
		t.Fatalf("the default type is not Datum's 1 vCPU / 2 GiB: %+v", got)
	}
	for _, alias := range []string{"datumcloud/d1-standard-4", "datumcloud/d1-standard-8", "datumcloud/d1-standard-16"} {
		if types.Find(alias) == nil {
			t.Errorf("the retired spelling %s finds no type", alias)
		}
	}
	if _, err := Decode([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")); err == nil {
		t.Error("a ConfigMap decoded as an InstanceType")
	}
}

// listFails is a client.Reader whose List answers err.
type listFails struct {
	client.Reader
	err error
}

func (l listFails) List(context.Context, client.ObjectList, ...client.ListOption) error { return l.err }

func TestLoadWithoutTheInstanceTypeAPIIsAnEmptyCatalog(t *testing.T) {
	gk := schema.GroupKind{Group: computev1alpha.GroupVersion.Group, Kind: computev1alpha.InstanceTypeKind}
	for name, tc := range map[string]struct {
		err     error
		wantErr bool
	}{
		"no such kind (the CRD is not installed)": {err: &meta.NoKindMatchError{GroupKind: gk}},
		"no such resource":                        {err: apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: "instancetypes"}, "")},
		"any other failure is an error":           {err: apierrors.NewServiceUnavailable("down"), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			types, err := Load(context.Background(), listFails{err: tc.err})
			if (err != nil) != tc.wantErr || len(types) != 0 {
				t.Errorf("Load() = %v, %v; want no types and error %v", types, err, tc.wantErr)
			}
		})
	}
}
