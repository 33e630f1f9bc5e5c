package sizing_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
	"github.com/citycells/compute/internal/quota/sizing"
)

// res returns a resource list; an empty amount leaves the resource out.
func res(cpu, mem string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

// ctr is a container stating limits and requests (nil: none).
func ctr(name string, limits, requests corev1.ResourceList) computev1alpha.SandboxContainer {
	c := computev1alpha.SandboxContainer{Name: name, Image: "img"}
	if limits != nil || requests != nil {
		c.Resources = &computev1alpha.ContainerResourceRequirements{Limits: limits, Requests: requests}
	}
	return c
}

// runtime is a sandbox runtime of type t (d1-standard-2 when empty).
func runtime(t string, requests corev1.ResourceList, cs ...computev1alpha.SandboxContainer) *computev1alpha.InstanceRuntimeSpec {
	if t == "" {
		t = "datumcloud-d1-standard-2"
	}
	return &computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: t, Requests: requests},
		Sandbox:   &computev1alpha.SandboxRuntime{Containers: cs},
	}
}

func TestResolveSizesEachContainerAndTheWhole(t *testing.T) {
	tests := map[string]struct {
		rt   *computev1alpha.InstanceRuntimeSpec
		want sizing.Sizes
	}{
		"one container stating nothing gets the instance type": {
			rt:   runtime("", nil, ctr("app", nil, nil)),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 1000, MemoryMiB: 2048}, Containers: []sizing.Size{{MilliCPU: 1000, MemoryMiB: 2048}}},
		},
		"a container stating only requests gets them, and the instance claims them": {
			rt:   runtime("", nil, ctr("app", nil, res("500m", "1Gi"))),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 500, MemoryMiB: 1024}, Containers: []sizing.Size{{MilliCPU: 500, MemoryMiB: 1024}}},
		},
		"a limit wins over a request": {
			rt:   runtime("", nil, ctr("app", res("750m", "1Gi"), res("250m", "512Mi"))),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 750, MemoryMiB: 1024}, Containers: []sizing.Size{{MilliCPU: 750, MemoryMiB: 1024}}},
		},
		"the containers stating nothing share what the others leave, the first taking the remainder": {
			rt: runtime("", nil, ctr("app", nil, nil), ctr("proxy", res("100m", "128Mi"), nil), ctr("c", nil, nil)),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 1000, MemoryMiB: 2048}, Containers: []sizing.Size{
				{MilliCPU: 450, MemoryMiB: 960}, {MilliCPU: 100, MemoryMiB: 128}, {MilliCPU: 450, MemoryMiB: 960}}},
		},
		"runtime requests adjust the instance's size": {
			rt:   runtime("", res("3", ""), ctr("a", nil, nil), ctr("b", nil, nil)),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 3000, MemoryMiB: 2048}, Containers: []sizing.Size{{MilliCPU: 1500, MemoryMiB: 1024}, {MilliCPU: 1500, MemoryMiB: 1024}}},
		},
		"cpu and memory resolve independently": {
			rt:   runtime("", nil, ctr("a", res("", "512Mi"), res("300m", ""))),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 300, MemoryMiB: 512}, Containers: []sizing.Size{{MilliCPU: 300, MemoryMiB: 512}}},
		},
		"every container rounds up on its own, so the total is their sum": {
			rt: runtime("", nil, ctr("a", res("0.0001", "1Mi"), nil), ctr("b", res("1m", "1"), nil)),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 2, MemoryMiB: 2}, Containers: []sizing.Size{
				{MilliCPU: 1, MemoryMiB: 1}, {MilliCPU: 1, MemoryMiB: 1}}},
		},
		"a type the catalog lacks is no matter when every container states its size": {
			rt:   runtime("acme/huge", nil, ctr("a", res("1", "1Gi"), nil), ctr("b", nil, res("2", "1Gi"))),
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 3000, MemoryMiB: 2048}, Containers: []sizing.Size{{MilliCPU: 1000, MemoryMiB: 1024}, {MilliCPU: 2000, MemoryMiB: 1024}}},
		},
		"a virtual machine is its runtime requests, then its type": {
			rt: &computev1alpha.InstanceRuntimeSpec{
				Resources:      computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-4", Requests: res("", "3Gi")},
				VirtualMachine: &computev1alpha.VirtualMachineRuntime{},
			},
			want: sizing.Sizes{Total: sizing.Size{MilliCPU: 2000, MemoryMiB: 3072}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := sizing.Resolve(tc.rt, apitest.StandardInstanceTypes())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveRefusesContainersLargerThanTheInstance(t *testing.T) {
	tests := map[string]struct {
		rt         *computev1alpha.InstanceRuntimeSpec
		wantField  string // containers[i].resources.<field>.<resource>
		wantDetail string
	}{
		"a container asking 16 cpu of a 1 vCPU type by requests only": {
			rt:        runtime("", nil, ctr("app", nil, res("16", "64Gi"))),
			wantField: "containers[0].resources.requests.cpu",
			wantDetail: `container "app" asks for 16 cpu, more than the instance's 1 cpu (instance type datumcloud-d1-standard-2): ` +
				`lower it or choose a larger instance type`,
		},
		"containers together over the type's memory, the one going over named": {
			rt:         runtime("", nil, ctr("a", res("100m", "1Gi"), nil), ctr("b", res("100m", "1Gi"), nil), ctr("c", nil, res("100m", "1Mi"))),
			wantField:  "containers[2].resources.requests.memory",
			wantDetail: `containers "a", "b", "c" together ask for 2049Mi memory, more than the instance's 2Gi memory (instance type datumcloud-d1-standard-2)`,
		},
		"over the runtime requests, which set the instance's size": {
			rt:         runtime("", res("500m", ""), ctr("a", res("600m", ""), nil)),
			wantField:  "containers[0].resources.limits.cpu",
			wantDetail: `the instance's 500m cpu (spec.runtime.resources.requests.cpu)`,
		},
		"leaving nothing for a container stating no size": {
			rt:         runtime("", nil, ctr("a", nil, nil), ctr("big", res("1", ""), nil)),
			wantField:  "containers[1].resources.limits.cpu",
			wantDetail: `container "big" asks for 1 cpu, which leaves less than 1m of the instance's 1 cpu (instance type datumcloud-d1-standard-2) for "a"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := sizing.Resolve(tc.rt, apitest.StandardInstanceTypes())
			var tl *sizing.TooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("Resolve() error = %v, want a TooLargeError", err)
			}
			if !errors.Is(err, sizing.ErrUnsizable) {
				t.Errorf("a TooLargeError does not wrap ErrUnsizable")
			}
			c := tl.Last()
			if got := "containers[" + strconv.Itoa(c.Container) + "].resources." + c.Field + "." + string(tl.Resource); got != tc.wantField {
				t.Errorf("field = %s, want %s", got, tc.wantField)
			}
			if !strings.Contains(tl.Detail(), tc.wantDetail) {
				t.Errorf("Detail() = %q, want it to contain %q", tl.Detail(), tc.wantDetail)
			}
			if !strings.Contains(err.Error(), "spec.runtime.sandbox."+tc.wantField) {
				t.Errorf("Error() = %q does not name spec.runtime.sandbox.%s", err, tc.wantField)
			}
		})
	}
}

func TestResolveCannotSizeWithoutTheType(t *testing.T) {
	for name, rt := range map[string]*computev1alpha.InstanceRuntimeSpec{
		"a container stating nothing":  runtime("acme/huge", nil, ctr("a", nil, nil)),
		"one of two stating its size":  runtime("acme/huge", nil, ctr("a", res("1", "1Gi"), nil), ctr("b", nil, nil)),
		"a virtual machine":            {Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "acme/huge"}, VirtualMachine: &computev1alpha.VirtualMachineRuntime{}},
		"cpu stated, memory by a type": runtime("acme/huge", res("1", ""), ctr("a", nil, nil)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sizing.Resolve(rt, apitest.StandardInstanceTypes())
			if !errors.Is(err, sizing.ErrUnsizable) || !strings.Contains(err.Error(), `instance type "acme/huge" is not in the catalog`) {
				t.Errorf("Resolve() error = %v, want ErrUnsizable naming the type", err)
			}
		})
	}
}

func TestHugeQuantitiesAreTooLargeNeverWrappedRound(t *testing.T) {
	for _, q := range []string{"1e18", "9e18", "999999999999999999999999", "8Ei", "1Ei"} {
		t.Run(q, func(t *testing.T) {
			_, err := sizing.Resolve(runtime("", nil, ctr("app", res(q, q), nil)), apitest.StandardInstanceTypes())
			var tl *sizing.TooLargeError
			if !errors.As(err, &tl) || tl.Resource != corev1.ResourceCPU {
				t.Fatalf("Resolve() error = %v, want cpu too large", err)
			}
			// Without a catalog type the containers' sum is the size:
			// saturated, never negative or zero.
			got, err := sizing.Resolve(runtime("acme/huge", nil, ctr("a", res(q, q), nil), ctr("b", res(q, q), nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := (sizing.Size{MilliCPU: 2 * sizing.MaxAmount, MemoryMiB: 2 * sizing.MaxAmount}); got.Total != want {
				t.Errorf("total = %+v, want %+v", got.Total, want)
			}
		})
	}
}
