package api_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nicPath is the first network interface of a Workload's template.
const nicPath = "spec.template.spec.networkInterfaces[0]"

// withInterface gives a Workload one interface on network default, with
// the fields of extra.
func withInterface(extra map[string]any) mutation {
	nic := map[string]any{"network": map[string]any{"name": "default"}}
	for k, v := range extra {
		nic[k] = v
	}
	return set("spec.template.spec.networkInterfaces", []any{nic})
}

// TestSchemaOfTheFieldsDatumAdded: envFrom, securityContext, runtime.class
// and the interface fields, with Datum's schema rules and messages.
func TestSchemaOfTheFieldsDatumAdded(t *testing.T) {
	ctx := context.Background()
	container := "spec.template.spec.runtime.sandbox.containers[0]"
	tests := map[string]struct {
		mutate              []mutation
		wantField, wantText string
	}{
		"every added field is accepted": {mutate: []mutation{
			set("spec.template.spec.runtime.class", "general-purpose"),
			set(container+".envFrom", []any{map[string]any{"prefix": "APP_", "configMapRef": map[string]any{"name": "app"}}, map[string]any{"secretRef": map[string]any{"name": "db", "optional": true}}}),
			set(container+".securityContext", map[string]any{"allowPrivilegeEscalation": false,
				"capabilities": map[string]any{"add": []any{"NET_BIND_SERVICE"}, "drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}),
			withInterface(map[string]any{"name": "eth0", "ipFamilies": []any{"IPv6", "IPv4"}, "reclaimPolicy": "Retain", "addresses": []any{map[string]any{"class": "public-ipv4"}}}),
		}},
		"an envFrom source with both a ConfigMap and a Secret is rejected": {
			mutate:    []mutation{set(container+".envFrom", []any{map[string]any{"configMapRef": map[string]any{"name": "a"}, "secretRef": map[string]any{"name": "b"}}})},
			wantField: container + ".envFrom[0]", wantText: "exactly one of configMapRef or secretRef must be set",
		},
		"a seccomp profile from a file is rejected": {
			mutate:    []mutation{set(container+".securityContext", map[string]any{"seccompProfile": map[string]any{"type": "Localhost"}})},
			wantField: container + ".securityContext.seccompProfile.type", wantText: "Unsupported value",
		},
		"an address family twice is rejected with Datum's message": {
			mutate:    []mutation{withInterface(map[string]any{"ipFamilies": []any{"IPv4", "IPv4"}})},
			wantField: nicPath + ".ipFamilies", wantText: "Each address family may be requested at most once",
		},
		"an address class twice is rejected with Datum's message": {
			mutate:    []mutation{withInterface(map[string]any{"addresses": []any{map[string]any{"class": "public-ipv4"}, map[string]any{"class": "public-ipv4"}}})},
			wantField: nicPath + ".addresses", wantText: "Each address class may be requested at most once",
		},
		"an unknown reclaim policy is rejected": {
			mutate:    []mutation{withInterface(map[string]any{"reclaimPolicy": "Recycle"})},
			wantField: nicPath + ".reclaimPolicy", wantText: "Unsupported value",
		},
		"an interface name longer than a device name is rejected": {
			mutate:    []mutation{withInterface(map[string]any{"name": "a-very-long-name0"})},
			wantField: nicPath + ".name", wantText: "Too long",
		},
		"two interfaces without names are rejected: both are eth0": {
			mutate: []mutation{set("spec.template.spec.networkInterfaces", []any{
				map[string]any{"network": map[string]any{"name": "a"}}, map[string]any{"network": map[string]any{"name": "b"}},
			})},
			wantField: "spec.template.spec.networkInterfaces[1]", wantText: "Duplicate value",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := dyn.Resource(workloadsGVR).Namespace("default").Create(ctx, object(t, workloadYAML(), tc.mutate...), metav1.CreateOptions{})
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("valid object rejected: %v", err)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) || !hasCause(err, tc.wantField, tc.wantText) {
				t.Fatalf("want %q on %s, got %v", tc.wantText, tc.wantField, err)
			}
		})
	}
}

// TestInterfaceDefaultsAndImmutability: an interface that leaves out its
// name, address families and reclaim policy reads back with Datum's
// defaults, and those fields and the address requests cannot change. (The
// name is the list's key: an interface renamed is another interface, so
// its rule, kept from Datum, has nothing to compare.)
func TestInterfaceDefaultsAndImmutability(t *testing.T) {
	ctx := context.Background()
	create := func(t *testing.T, extra map[string]any) *unstructured.Unstructured {
		t.Helper()
		created, err := dyn.Resource(workloadsGVR).Namespace("default").Create(ctx, object(t, workloadYAML(), withInterface(extra)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	t.Run("the defaults are written", func(t *testing.T) {
		created := create(t, nil)
		nics, _, _ := unstructured.NestedSlice(created.Object, "spec", "template", "spec", "networkInterfaces")
		want := map[string]any{"network": map[string]any{"name": "default"}, "name": "eth0", "ipFamilies": []any{"IPv6"}, "reclaimPolicy": "Delete"}
		if diff := cmp.Diff(want, nics[0]); diff != "" {
			t.Fatalf("interface (-want +got):\n%s", diff)
		}
	})
	tests := map[string]struct {
		extra               map[string]any
		path                string
		value               any
		wantField, wantText string
	}{
		"the address families cannot change": {nil, nicPath + ".ipFamilies", []any{"IPv4"},
			nicPath + ".ipFamilies", "ipFamilies is immutable and cannot be changed after creation"},
		"the reclaim policy cannot change": {nil, nicPath + ".reclaimPolicy", "Retain",
			nicPath + ".reclaimPolicy", "reclaimPolicy is immutable and cannot be changed after creation"},
		"addresses cannot be added": {nil, nicPath + ".addresses", []any{map[string]any{"class": "public-ipv4"}},
			nicPath, "addresses is immutable and cannot be set, changed, or cleared after creation"},
		"addresses cannot be cleared": {map[string]any{"addresses": []any{map[string]any{"class": "public-ipv4"}}}, nicPath + ".addresses", nil,
			nicPath, "addresses is immutable and cannot be set, changed, or cleared after creation"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			created := create(t, tc.extra)
			set(tc.path, tc.value)(t, created.Object)
			_, err := dyn.Resource(workloadsGVR).Namespace("default").Update(ctx, created, metav1.UpdateOptions{})
			if err == nil || !hasCause(err, tc.wantField, tc.wantText) {
				t.Fatalf("want %q on %s, got %v", tc.wantText, tc.wantField, err)
			}
		})
	}
}
