// Package catalog is compute's instance-type catalog: the machine shapes a
// Workload template may name in spec.runtime.resources.instanceType, with the
// vCPU and memory each provides. Admission checks instance types against it
// and quota sizing resolves an Instance's resources from it. Pure data.
package catalog

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultInstanceType is the instance type a template gets when it names
// none.
const DefaultInstanceType = "datumcloud/d1-standard-2"

// InstanceType is one machine shape.
type InstanceType struct {
	// Name is how templates refer to the type, e.g. "datumcloud/d1-standard-2".
	Name string
	// MilliCPU is the vCPU the type provides, in millicores.
	MilliCPU int64
	// MemoryMiB is the memory the type provides, in MiB.
	MemoryMiB int64
}

// CPU returns the type's vCPU as a quantity.
func (t InstanceType) CPU() resource.Quantity {
	return *resource.NewMilliQuantity(t.MilliCPU, resource.DecimalSI)
}

// Memory returns the type's memory as a quantity.
func (t InstanceType) Memory() resource.Quantity {
	return *resource.NewQuantity(t.MemoryMiB*1024*1024, resource.BinarySI)
}

// types is the catalog, sorted by name.
var types = []InstanceType{
	{Name: "datumcloud/d1-standard-16", MilliCPU: 8000, MemoryMiB: 16 * 1024},
	{Name: "datumcloud/d1-standard-2", MilliCPU: 1000, MemoryMiB: 2 * 1024},
	{Name: "datumcloud/d1-standard-4", MilliCPU: 2000, MemoryMiB: 4 * 1024},
	{Name: "datumcloud/d1-standard-8", MilliCPU: 4000, MemoryMiB: 8 * 1024},
}

// Lookup returns the instance type called name.
func Lookup(name string) (InstanceType, bool) {
	i := slices.IndexFunc(types, func(t InstanceType) bool { return t.Name == name })
	if i < 0 {
		return InstanceType{}, false
	}
	return types[i], true
}

// Names returns the name of every instance type, sorted.
func Names() []string {
	out := make([]string, 0, len(types))
	for _, t := range types {
		out = append(out, t.Name)
	}
	return out
}
