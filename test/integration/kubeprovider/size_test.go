package kubeprovider

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/quota"
)

// claimOf returns the vCPU (millicores) and memory (MiB) the quota claim of
// inst asks for, built as the cell builds it from the cell's catalog.
func claimOf(t *testing.T, inst *computev1alpha.Instance) (cpu, mem int64) {
	t.Helper()
	types, err := catalog.Load(context.Background(), k8s)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := quota.BuildClaim(inst, types, quota.Target{Project: "p", Namespace: "ns"}, "cell")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range claim.Spec.Requests {
		switch r.ResourceType {
		case computev1alpha.ResourceTypeVCPUs:
			cpu = r.Amount
		case computev1alpha.ResourceTypeMemory:
			mem = r.Amount
		}
	}
	return cpu, mem
}

// TestARequestsOnlyContainersClaimIsItsPodsSize: a container stating only
// requests runs at them, and the Instance's quota claim is the Pod's
// containers' limits added up, not its instance type (issue 39). A second
// container stating nothing gets what is left of the type.
func TestARequestsOnlyContainersClaimIsItsPodsSize(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "sized-0").with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-4"
		i.Spec.Runtime.Sandbox.Containers[0].Resources = &computev1alpha.ContainerResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
		i.Spec.Runtime.Sandbox.Containers = append(i.Spec.Runtime.Sandbox.Containers, computev1alpha.SandboxContainer{Name: "side", Image: "ghcr.io/citycells/hello:1.0"})
	}).create(t)

	pod := waitPod(t, inst)
	g.Expect(pod.Spec.Containers).To(HaveLen(2))
	var cpu, mem int64
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Limits.Cpu().MilliValue()
		mem += c.Resources.Limits.Memory().Value() >> 20
	}
	app := pod.Spec.Containers[0].Resources
	g.Expect(app.Limits.Cpu().MilliValue()).To(Equal(int64(500)))
	g.Expect(app.Limits.Memory().Value()).To(Equal(int64(1 << 30)))
	g.Expect(pod.Spec.Containers[1].Resources.Limits.Cpu().MilliValue()).To(Equal(int64(1500)), "the other container gets what is left of the type's 2 vCPU")
	claimCPU, claimMem := claimOf(t, inst)
	t.Logf("the Pod's containers are limited to %dm and %d MiB; the claim asks %dm and %d MiB", cpu, mem, claimCPU, claimMem)
	g.Expect(claimCPU).To(Equal(cpu))
	g.Expect(claimMem).To(Equal(mem))
}

// TestAContainerLargerThanItsTypeGetsNoPod: an Instance whose container
// states more than its type (a project plane without compute's webhook) is
// a configuration error naming the field; no Pod of that size is created.
func TestAContainerLargerThanItsTypeGetsNoPod(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "huge-0").with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Sandbox.Containers[0].Resources = &computev1alpha.ContainerResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}}
	}).create(t)
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError,
		`spec.runtime.sandbox.containers[0].resources.requests.cpu: container "app" asks for 16 cpu, more than the instance's 1 cpu (instance type datumcloud/d1-standard-2)`)
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Pod for an Instance larger than its type: %v", err)
}
