package catalog

import (
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	tests := map[string]struct {
		name         string
		wantOK       bool
		wantMilliCPU int64
		wantMemory   string
	}{
		"the default type is one vCPU and two GiB": {
			name: DefaultInstanceType, wantOK: true, wantMilliCPU: 1000, wantMemory: "2Gi",
		},
		"a larger standard type doubles both": {
			name: "datumcloud/d1-standard-4", wantOK: true, wantMilliCPU: 2000, wantMemory: "4Gi",
		},
		"an unknown type is not found": {
			name: "datumcloud/d9-huge",
		},
		"names are case sensitive": {
			name: "DatumCloud/d1-standard-2",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Lookup(tc.name)
			if ok != tc.wantOK {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tc.name, ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if got.MilliCPU != tc.wantMilliCPU {
				t.Errorf("MilliCPU = %d, want %d", got.MilliCPU, tc.wantMilliCPU)
			}
			if mem := got.Memory(); mem.String() != tc.wantMemory {
				t.Errorf("Memory = %s, want %s", mem.String(), tc.wantMemory)
			}
			if cpu := got.CPU(); cpu.MilliValue() != tc.wantMilliCPU {
				t.Errorf("CPU = %s, want %dm", cpu.String(), tc.wantMilliCPU)
			}
		})
	}
}

func TestNamesAreSortedAndUnique(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Fatalf("Names() is not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("Names() has duplicates: %v", names)
	}
	if !slices.Contains(names, DefaultInstanceType) {
		t.Fatalf("the default instance type %q is not in the catalog", DefaultInstanceType)
	}
}
