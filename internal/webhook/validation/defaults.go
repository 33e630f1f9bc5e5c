package validation

import (
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/revision"
)

// DefaultDiskType is the disk type of a disk volume that names none.
const DefaultDiskType = "pd-standard"

// DefaultWorkload fills in the defaults of w in place: revisionHistoryLimit
// 10, instanceManagementPolicy OrderedReady, maxUnavailable 1 when a rollout
// strategy is given, the default instance type, TCP ports and pd-standard
// disks. Defaulting is idempotent and never overwrites a value the user set.
func DefaultWorkload(w *computev1alpha.Workload) {
	if w.Spec.RevisionHistoryLimit == nil {
		w.Spec.RevisionHistoryLimit = ptr.To(int32(revision.DefaultHistoryLimit))
	}
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		if p.ScaleSettings.InstanceManagementPolicy == "" {
			p.ScaleSettings.InstanceManagementPolicy = computev1alpha.OrderedReadyInstanceManagementPolicy
		}
		if p.RolloutStrategy != nil && p.RolloutStrategy.MaxUnavailable == nil {
			p.RolloutStrategy.MaxUnavailable = ptr.To(int32(1))
		}
	}
	defaultInstanceSpec(&w.Spec.Template.Spec)
}

// defaultInstanceSpec fills in the defaults of an instance template's spec.
func defaultInstanceSpec(spec *computev1alpha.InstanceSpec) {
	rt := &spec.Runtime
	if rt.Resources.InstanceType == "" {
		rt.Resources.InstanceType = catalog.DefaultInstanceType
	}
	if rt.Sandbox != nil {
		for i := range rt.Sandbox.Containers {
			defaultPorts(rt.Sandbox.Containers[i].Ports)
		}
	}
	if rt.VirtualMachine != nil {
		defaultPorts(rt.VirtualMachine.Ports)
	}
	for i := range spec.Volumes {
		if d := spec.Volumes[i].Disk; d != nil && d.Type == "" {
			d.Type = DefaultDiskType
		}
	}
}

// defaultPorts makes ports without a protocol TCP.
func defaultPorts(ports []computev1alpha.NamedPort) {
	for i := range ports {
		if ports[i].Protocol == "" {
			ports[i].Protocol = "TCP"
		}
	}
}
