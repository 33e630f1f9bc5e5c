package kubernetes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// instBuilder builds Instances.
type instBuilder struct{ i computev1alpha.Instance }

// makeInst returns a one-container Instance of the default instance type
// (1 vCPU, 2 GiB), template hash "h1".
func makeInst() *instBuilder {
	return &instBuilder{i: computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "uid-1",
			Labels: map[string]string{computev1alpha.WorkloadNameLabel: "web"}},
		Spec: computev1alpha.InstanceSpec{
			Runtime: computev1alpha.InstanceRuntimeSpec{
				Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
				Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
					Name: "app", Image: "ghcr.io/x/app:1",
				}}},
			},
			Controller: &computev1alpha.InstanceController{TemplateHash: "h1"},
		},
	}}
}

func (b *instBuilder) with(f func(*computev1alpha.Instance)) *instBuilder {
	f(&b.i)
	return b
}

// container adds a container.
func (b *instBuilder) container(c computev1alpha.SandboxContainer) *instBuilder {
	b.i.Spec.Runtime.Sandbox.Containers = append(b.i.Spec.Runtime.Sandbox.Containers, c)
	return b
}

// first changes the first container.
func (b *instBuilder) first(f func(*computev1alpha.SandboxContainer)) *instBuilder {
	f(&b.i.Spec.Runtime.Sandbox.Containers[0])
	return b
}

// volume adds a volume and mounts it in the first container at path
// (none when path is empty).
func (b *instBuilder) volume(v computev1alpha.InstanceVolume, path string) *instBuilder {
	b.i.Spec.Volumes = append(b.i.Spec.Volumes, v)
	if path != "" {
		c := &b.i.Spec.Runtime.Sandbox.Containers[0]
		c.VolumeAttachments = append(c.VolumeAttachments, computev1alpha.VolumeAttachment{Name: v.Name, MountPath: ptr.To(path)})
	}
	return b
}

func (b *instBuilder) vm() *instBuilder {
	b.i.Spec.Runtime.Sandbox = nil
	b.i.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}}}
	b.i.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{Image: "ubuntu"}}}
	return b
}

func (b *instBuilder) build() *computev1alpha.Instance { return b.i.DeepCopy() }

// podBuilder builds the Pods the kubelet and scheduler would report.
type podBuilder struct{ p corev1.Pod }

// makePod returns the Pod of makeInst(), as created and not yet scheduled.
func makePod() *podBuilder {
	pod, err := podFor(makeInst().build(), 1)
	if err != nil {
		panic(err)
	}
	return &podBuilder{p: *pod}
}

func (b *podBuilder) owner(uid string) *podBuilder {
	b.p.OwnerReferences[0].UID = types.UID(uid)
	return b
}

func (b *podBuilder) hash(h string) *podBuilder {
	b.p.Annotations[TemplateHashAnnotation] = h
	return b
}

// on binds the Pod to a node.
func (b *podBuilder) on(node string) *podBuilder {
	b.p.Spec.NodeName = node
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	return b
}

func (b *podBuilder) unschedulable(msg string) *podBuilder {
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg})
	return b
}

func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder {
	b.p.Status.Phase = p
	return b
}

// running makes the Pod Running with its IP, ready or not (as the kubelet
// writes it).
func (b *podBuilder) running(ready bool) *podBuilder {
	b.p.Status.Phase = corev1.PodRunning
	b.p.Status.PodIP = "10.244.0.7"
	c := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	if !ready {
		c = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}
	}
	b.p.Status.Conditions = append(b.p.Status.Conditions, c)
	b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: ready, Image: "ghcr.io/x/app:1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return b
}

// readyCondition replaces the Pod's Ready condition.
func (b *podBuilder) readyCondition(st corev1.ConditionStatus, reason string) *podBuilder {
	for i := range b.p.Status.Conditions {
		if b.p.Status.Conditions[i].Type == corev1.PodReady {
			b.p.Status.Conditions[i] = corev1.PodCondition{Type: corev1.PodReady, Status: st, Reason: reason}
			return b
		}
	}
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: st, Reason: reason})
	return b
}

// container sets the status of the Pod's only container.
func (b *podBuilder) container(cs corev1.ContainerStatus) *podBuilder {
	cs.Name = "app"
	b.p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return b
}

func (b *podBuilder) waiting(reason, msg string) *podBuilder {
	return b.container(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}})
}

func (b *podBuilder) deleting() *podBuilder {
	b.p.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)))
	return b
}

func (b *podBuilder) with(f func(*corev1.Pod)) *podBuilder {
	f(&b.p)
	return b
}

func (b *podBuilder) build() *corev1.Pod { return b.p.DeepCopy() }

// crashed is the status of a container in CrashLoopBackOff after exiting
// with code.
func crashed(code int32, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=app pod=web-0_ns(uid-1)"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}},
	}
}

// res is a resource list of cpu and memory.
func res(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}
