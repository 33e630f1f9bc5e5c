package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// instanceBuilder builds test Instances.
type instanceBuilder struct {
	inst *computev1alpha.Instance
}

// makeInstance returns a d1-standard-2 sandbox Instance with one container
// and no resources of its own.
func makeInstance(name string) instanceBuilder {
	return instanceBuilder{inst: &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-cell", UID: types.UID("uid-" + name), Generation: 1},
		Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
			Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
			Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{
				{Name: "app", Image: "nginx"},
			}},
		}},
	}}
}

func (b instanceBuilder) withType(t string) instanceBuilder {
	b.inst.Spec.Runtime.Resources.InstanceType = t
	return b
}

func (b instanceBuilder) withRequests(cpu, mem string) instanceBuilder {
	b.inst.Spec.Runtime.Resources.Requests = resources(cpu, mem)
	return b
}

// withContainer adds a container with limits.
func (b instanceBuilder) withContainer(name, cpu, mem string) instanceBuilder {
	b.inst.Spec.Runtime.Sandbox.Containers = append(b.inst.Spec.Runtime.Sandbox.Containers, computev1alpha.SandboxContainer{
		Name: name, Image: "nginx", Resources: &computev1alpha.ContainerResourceRequirements{Limits: resources(cpu, mem)},
	})
	return b
}

// withLimits sets limits on every existing container.
func (b instanceBuilder) withLimits(cpu, mem string) instanceBuilder {
	for i := range b.inst.Spec.Runtime.Sandbox.Containers {
		b.inst.Spec.Runtime.Sandbox.Containers[i].Resources = &computev1alpha.ContainerResourceRequirements{Limits: resources(cpu, mem)}
	}
	return b
}

func (b instanceBuilder) asVirtualMachine() instanceBuilder {
	b.inst.Spec.Runtime.Sandbox = nil
	b.inst.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
		VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}},
	}
	return b
}

func (b instanceBuilder) build() *computev1alpha.Instance {
	return b.inst
}

// resources builds a ResourceList; an empty string leaves the resource out.
func resources(cpu, mem string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return rl
}

// claimBuilder builds test claims.
type claimBuilder struct {
	claim *quotav1alpha1.ResourceClaim
}

func makeClaim() claimBuilder {
	return claimBuilder{claim: &quotav1alpha1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "instance-web-0", Namespace: "default", Generation: 1},
	}}
}

// granted sets the Granted condition as the quota system would.
func (b claimBuilder) granted(status metav1.ConditionStatus, reason, msg string) claimBuilder {
	b.claim.Status.Conditions = []metav1.Condition{{Type: quotav1alpha1.ResourceClaimConditionGranted, Status: status, Reason: reason, Message: msg}}
	return b
}

func (b claimBuilder) observed(gen int64) claimBuilder {
	b.claim.Status.ObservedGeneration = gen
	return b
}

func (b claimBuilder) generation(gen int64) claimBuilder {
	b.claim.Generation = gen
	return b
}

func (b claimBuilder) deleting() claimBuilder {
	now := metav1.Now()
	b.claim.DeletionTimestamp = &now
	return b
}

func (b claimBuilder) withDenied(t, msg string) claimBuilder {
	b.claim.Status.Allocations = append(b.claim.Status.Allocations, quotav1alpha1.RequestAllocation{
		ResourceType: t, Status: quotav1alpha1.AllocationDenied, Message: msg,
	})
	return b
}

func (b claimBuilder) build() *quotav1alpha1.ResourceClaim {
	return b.claim
}
