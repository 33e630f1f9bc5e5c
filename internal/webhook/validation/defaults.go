package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
)

// DefaultDiskType is the disk type of a disk volume that names none.
const DefaultDiskType = "pd-standard"

// DefaultWorkload fills in the defaults of w in place: revisionHistoryLimit
// 10, instanceManagementPolicy OrderedReady, maxUnavailable 1 when a rollout
// strategy is given, spec.rollout's strategy AllAtOnce, onFailure Halt and
// approval Automatic when spec.rollout is given, the default instance type,
// TCP ports, pd-standard disks and the network interface defaults of the
// schema (name eth0, ipFamilies [IPv6], reclaimPolicy Delete); volumes of the first API shape
// (secret.name, disk{type, size, image}) move to Datum's shape
// (secret.secretName, disk.template). Defaulting is idempotent and never
// overwrites a value the user set.
func DefaultWorkload(w *computev1alpha.Workload) {
	if w.Spec.RevisionHistoryLimit == nil {
		w.Spec.RevisionHistoryLimit = ptr.To(int32(revision.DefaultHistoryLimit))
	}
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		placement.RewriteCityCodes(p)
		if p.ScaleSettings.InstanceManagementPolicy == "" {
			p.ScaleSettings.InstanceManagementPolicy = computev1alpha.OrderedReadyInstanceManagementPolicy
		}
		if p.RolloutStrategy != nil && p.RolloutStrategy.MaxUnavailable == nil {
			p.RolloutStrategy.MaxUnavailable = ptr.To(int32(1))
		}
	}
	if r := w.Spec.Rollout; r != nil {
		if r.Strategy == "" {
			r.Strategy = computev1alpha.AllAtOnceCityRollout
		}
		if r.OnFailure == "" {
			r.OnFailure = computev1alpha.HaltOnFailure
		}
		if r.Approval == "" {
			r.Approval = computev1alpha.AutomaticRolloutApproval
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
	for i := range spec.NetworkInterfaces {
		defaultInterface(&spec.NetworkInterfaces[i])
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if s := v.Secret; s != nil && s.SecretName == "" && s.Name != "" {
			s.SecretName, s.Name = s.Name, ""
		}
		if d := v.Disk; d != nil {
			migrateDisk(d)
			if d.Template != nil && d.Template.Spec.Type == "" {
				d.Template.Spec.Type = DefaultDiskType
			}
		}
	}
}

// migrateDisk moves a disk of the first shape (type, size, image) into the
// template shape. A disk that has a template already is left alone, so a
// Workload mixing both shapes is refused by validation instead.
func migrateDisk(d *computev1alpha.DiskTemplateVolumeSource) {
	if d.Template != nil || (d.Type == "" && d.Size == nil && d.Image == "") { //nolint:staticcheck // the legacy shape is read to convert it
		return
	}
	t := &computev1alpha.DiskTemplateVolumeSourceTemplate{Spec: computev1alpha.DiskSpec{Type: d.Type}} //nolint:staticcheck // the legacy shape is read to convert it
	if d.Size != nil {
		t.Spec.Resources = &computev1alpha.DiskResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: d.Size.DeepCopy()},
		}
	}
	if d.Image != "" {
		t.Spec.Populator = &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: d.Image}}
	}
	d.Template, d.Type, d.Size, d.Image = t, "", nil, "" //nolint:staticcheck // the legacy shape is cleared once converted
}

// defaultInterface writes the schema's defaults on an interface, as the API
// server does before admission (so a Workload defaulted here and one read
// from the API server are equal; the template hash ignores them either
// way).
func defaultInterface(nic *computev1alpha.InstanceNetworkInterface) {
	if nic.Name == "" {
		nic.Name = computev1alpha.DefaultInterfaceName
	}
	if len(nic.IPFamilies) == 0 {
		nic.IPFamilies = []computev1alpha.IPFamily{computev1alpha.DefaultIPFamily}
	}
	if nic.ReclaimPolicy == "" {
		nic.ReclaimPolicy = computev1alpha.DefaultReclaimPolicy
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
