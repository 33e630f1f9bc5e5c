package quota

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
)

func TestSizeOf(t *testing.T) {
	tests := map[string]struct {
		inst    *computev1alpha.Instance
		want    Size
		wantErr error
	}{
		"a bare d1-standard-2 is sized from the catalog as 1 vCPU and 2 GiB": {
			inst: makeInstance("a").build(),
			want: Size{MilliCPU: 1000, MemoryMiB: 2048},
		},
		"container limits win when every container sets them, summed": {
			inst: makeInstance("a").withLimits("500m", "256Mi").withContainer("sidecar", "250m", "128Mi").withRequests("4", "8Gi").build(),
			want: Size{MilliCPU: 750, MemoryMiB: 384},
		},
		"one container without limits makes the instance requests apply": {
			inst: makeInstance("a").withContainer("sidecar", "250m", "128Mi").withRequests("3", "6Gi").build(),
			want: Size{MilliCPU: 3000, MemoryMiB: 6144},
		},
		"instance requests win over the catalog": {
			inst: makeInstance("a").withRequests("2", "1Gi").build(),
			want: Size{MilliCPU: 2000, MemoryMiB: 1024},
		},
		"cpu and memory resolve independently": {
			inst: makeInstance("a").withLimits("", "512Mi").withRequests("3", "").build(),
			want: Size{MilliCPU: 3000, MemoryMiB: 512},
		},
		"memory rounds up to the next MiB and cpu to the next millicore": {
			inst: makeInstance("a").withLimits("0.0001", "1Mi").withContainer("b", "1m", "1").build(),
			want: Size{MilliCPU: 2, MemoryMiB: 2},
		},
		"a virtual machine uses the instance requests, then the catalog": {
			inst: makeInstance("a").asVirtualMachine().withRequests("", "4Gi").withType("datumcloud/d1-standard-4").build(),
			want: Size{MilliCPU: 2000, MemoryMiB: 4096},
		},
		"an unknown instance type without limits or requests cannot be sized": {
			inst:    makeInstance("a").withType("acme/huge").build(),
			wantErr: ErrUnsizable,
		},
		"an unknown instance type is fine when limits size everything": {
			inst: makeInstance("a").withType("acme/huge").withLimits("1", "1Gi").build(),
			want: Size{MilliCPU: 1000, MemoryMiB: 1024},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := SizeOf(tc.inst, apitest.StandardInstanceTypes())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SizeOf() error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SizeOf() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
