package quota

import (
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/quota/sizing"
)

// ErrUnsizable means an Instance's vCPU or memory cannot be resolved
// (sizing.ErrUnsizable).
var ErrUnsizable = sizing.ErrUnsizable

// Size is what an Instance claims besides itself (sizing.Size).
type Size = sizing.Size

// SizeOf resolves the vCPU and memory an Instance claims by the one
// sizing rule (sizing.Of) from the InstanceType catalog types: the sum of
// the limits the Kubernetes provider gives its Pod's containers, which the
// CLI's quota view shares.
func SizeOf(inst *computev1alpha.Instance, types catalog.Catalog) (Size, error) {
	return sizing.Of(inst, types)
}
