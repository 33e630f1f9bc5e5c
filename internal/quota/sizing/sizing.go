// Package sizing is the one rule for how much vCPU and memory an Instance
// claims: the cell's quota claims and the CLI's quota view both use Of, so
// `datumctl compute quota` adds up what the cell claims. It is pure (API
// types and a catalog the caller read) so the CLI can import it without
// the cell.
package sizing

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

// ErrUnsizable means an Instance's vCPU or memory cannot be resolved: its
// instance type is not in the catalog and neither its containers' limits nor
// its instance requests say how much it needs.
var ErrUnsizable = errors.New("instance cannot be sized")

// mebibyte is the number of bytes in a MiB, the base unit of the memory
// resource type.
const mebibyte = 1 << 20

// Size is what an Instance claims besides itself.
type Size struct {
	// MilliCPU is the vCPU in millicores (compute.datumapis.com/vcpus).
	MilliCPU int64
	// MemoryMiB is the memory in MiB (compute.datumapis.com/memory).
	MemoryMiB int64
}

// Of resolves the vCPU and memory an Instance claims. Each resource is
// resolved on its own, first match wins:
//
//  1. container limits, when every container of the sandbox sets a limit
//     for it (one unlimited container makes the sum meaningless, as in a
//     Pod), summed;
//  2. the instance's spec.runtime.resources.requests;
//  3. the instance type from types, the InstanceType catalog of the plane
//     (a retired spelling finds its replacement).
//
// CPU rounds up to the millicore and memory up to the MiB, so a claim never
// asks for less than the Instance may use.
func Of(inst *computev1alpha.Instance, types catalog.Catalog) (Size, error) {
	cpu, err := resolve(inst, types, corev1.ResourceCPU)
	if err != nil {
		return Size{}, err
	}
	mem, err := resolve(inst, types, corev1.ResourceMemory)
	if err != nil {
		return Size{}, err
	}
	return Size{MilliCPU: cpu.MilliValue(), MemoryMiB: ceilDiv(mem.Value(), mebibyte)}, nil
}

// resolve returns the quantity of one resource by the precedence of Of.
func resolve(inst *computev1alpha.Instance, types catalog.Catalog, name corev1.ResourceName) (resource.Quantity, error) {
	if q, ok := containerLimits(inst, name); ok {
		return q, nil
	}
	if q, ok := inst.Spec.Runtime.Resources.Requests[name]; ok {
		return q, nil
	}
	typeName := inst.Spec.Runtime.Resources.InstanceType
	t := types.Find(typeName)
	if t == nil {
		return resource.Quantity{}, fmt.Errorf("%w: instance type %q is not in the catalog and the instance sets no %s limits or requests",
			ErrUnsizable, typeName, name)
	}
	cpu, mem := catalog.Size(t)
	if name == corev1.ResourceCPU {
		return cpu, nil
	}
	return mem, nil
}

// containerLimits sums the limits of every sandbox container for name; it
// reports false when there are no containers or one of them sets no limit.
func containerLimits(inst *computev1alpha.Instance, name corev1.ResourceName) (resource.Quantity, bool) {
	sb := inst.Spec.Runtime.Sandbox
	if sb == nil || len(sb.Containers) == 0 {
		return resource.Quantity{}, false
	}
	var sum resource.Quantity
	for _, c := range sb.Containers {
		if c.Resources == nil {
			return resource.Quantity{}, false
		}
		q, ok := c.Resources.Limits[name]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(q)
	}
	return sum, true
}

// ceilDiv divides rounding up; n is never negative for quantities the API
// accepts, and a negative one rounds towards zero.
func ceilDiv(n, d int64) int64 {
	if n <= 0 {
		return n / d
	}
	return (n + d - 1) / d
}
