package validation

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/locations"
)

// workloadBuilder builds Workloads for tests: makeWorkload() is valid, each
// with* method changes one thing.
type workloadBuilder struct{ computev1alpha.Workload }

func makeWorkload() *workloadBuilder {
	w := &workloadBuilder{}
	w.Name, w.Namespace = "web", "default"
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name:          "edge",
		CityCodes:     []string{"DFW", "LHR"},
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
	}}
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{
			Name:  "app",
			Image: "ghcr.io/example/app:1.0",
			Ports: []computev1alpha.NamedPort{{Name: "http", Port: 8080}},
		}},
	}
	return w
}

func (w *workloadBuilder) with(f func(*computev1alpha.Workload)) *workloadBuilder {
	f(&w.Workload)
	return w
}

// withAutoscaling has the first placement autoscale between its
// minReplicas and 4 on metrics.
func (w *workloadBuilder) withAutoscaling(metrics ...computev1alpha.MetricSpec) *workloadBuilder {
	w.Spec.Placements[0].ScaleSettings.MaxReplicas = ptr.To[int32](4)
	w.Spec.Placements[0].ScaleSettings.Metrics = metrics
	return w
}

func (w *workloadBuilder) container() *computev1alpha.SandboxContainer {
	return &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
}

func (w *workloadBuilder) withContainer(c computev1alpha.SandboxContainer) *workloadBuilder {
	w.Spec.Template.Spec.Runtime.Sandbox.Containers = append(w.Spec.Template.Spec.Runtime.Sandbox.Containers, c)
	return w
}

func (w *workloadBuilder) withVolume(v computev1alpha.InstanceVolume) *workloadBuilder {
	w.Spec.Template.Spec.Volumes = append(w.Spec.Template.Spec.Volumes, v)
	return w
}

func (w *workloadBuilder) withMount(volume, path string) *workloadBuilder {
	a := computev1alpha.VolumeAttachment{Name: volume}
	if path != "" {
		a.MountPath = ptr.To(path)
	}
	w.container().VolumeAttachments = append(w.container().VolumeAttachments, a)
	return w
}

func (w *workloadBuilder) asVirtualMachine(attach ...string) *workloadBuilder {
	w.Spec.Template.Spec.Runtime.Sandbox = nil
	vm := &computev1alpha.VirtualMachineRuntime{}
	for _, a := range attach {
		vm.VolumeAttachments = append(vm.VolumeAttachments, computev1alpha.VolumeAttachment{Name: a})
	}
	w.Spec.Template.Spec.Runtime.VirtualMachine = vm
	return w
}

func (w *workloadBuilder) build() *computev1alpha.Workload { return w.DeepCopy() }

func disk(name, image string) computev1alpha.InstanceVolume {
	spec := computev1alpha.DiskSpec{
		Resources: &computev1alpha.DiskResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
	}
	if image != "" {
		spec.Populator = &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: image}}
	}
	return computev1alpha.InstanceVolume{Name: name, Disk: &computev1alpha.DiskTemplateVolumeSource{
		Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{Spec: spec},
	}}
}

func secret(name, source string) computev1alpha.InstanceVolume {
	return computev1alpha.InstanceVolume{Name: name, Secret: &computev1alpha.SecretVolumeSource{SecretName: source}}
}

func configMap(name, source string) computev1alpha.InstanceVolume {
	return computev1alpha.InstanceVolume{Name: name, ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: source}}
}

// bound returns an environment with the given cities bound.
func bound(codes ...string) Environment {
	return Environment{Cities: locations.ReadyCities("l", codes...), InstanceTypes: standardTypes()}
}

// standardTypes is a catalog like Datum's standard set
// (config/instancetypes): d1-standard-2 and d1-standard-4, Active.
func standardTypes() catalog.Catalog {
	return catalog.Catalog{
		*makeInstanceType("datumcloud-d1-standard-2", "1", "2Gi").build(),
		*makeInstanceType("datumcloud-d1-standard-4", "2", "4Gi").build(),
	}
}

// instanceTypeBuilder builds an InstanceType.
type instanceTypeBuilder struct{ it *computev1alpha.InstanceType }

// makeInstanceType starts an Active InstanceType of cpu and memory.
func makeInstanceType(name, cpu, memory string) *instanceTypeBuilder {
	return &instanceTypeBuilder{it: &computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory)},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseActive},
		},
	}}
}

// withPhase sets the phase and the replacement.
func (b *instanceTypeBuilder) withPhase(phase computev1alpha.InstanceTypeLifecyclePhase, replacement string) *instanceTypeBuilder {
	b.it.Spec.Lifecycle = computev1alpha.InstanceTypeLifecycle{Phase: phase, ReplacementInstanceType: replacement}
	return b
}

// deprecatedAt records the deprecation time.
func (b *instanceTypeBuilder) deprecatedAt(t time.Time) *instanceTypeBuilder {
	b.it.Status.DeprecatedAt = &metav1.Time{Time: t}
	return b
}

// build returns a copy of the InstanceType.
func (b *instanceTypeBuilder) build() *computev1alpha.InstanceType { return b.it.DeepCopy() }
