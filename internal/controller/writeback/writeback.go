package writeback

import (
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/mirror"
)

// Copy returns the hub copy of cell Instance inst, owned by hub
// WorkloadDeployment owner: same namespace and name, the Instance's labels,
// annotations, spec and status. Finalizers, owner references of the cell
// and server-set metadata stay in the cell.
//
// It records the cell Instance's UID and creation time (mirror.StampSource),
// so a recreated Instance replaces its copy instead of updating it.
func Copy(inst *computev1alpha.Instance, owner *computev1alpha.WorkloadDeployment) *computev1alpha.Instance {
	out := mirror.Instance(inst, inst.Namespace, owner)
	mirror.StampSource(out, inst)
	return out
}

// ownedBy reports whether the cell runs the hub Instance's deployment:
// cellWD is the cell's WorkloadDeployment of the name the Instance's
// workload-deployment-name label gives, nil when there is none, and its city
// must be the Instance's.
func ownedBy(hubInst *computev1alpha.Instance, cellWD *computev1alpha.WorkloadDeployment) bool {
	if cellWD == nil {
		return false
	}
	city, ok := hubInst.Labels[computev1alpha.CityCodeLabel]
	return !ok || city == cellWD.Spec.CityCode
}
