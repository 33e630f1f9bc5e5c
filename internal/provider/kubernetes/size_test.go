package kubernetes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/internal/quota/sizing"
)

// sizeResources are the resources an Instance is sized in.
var sizeResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// shape is a random Instance's sizing fields, kept to check the Pod
// against what the template states.
type shape struct {
	inst  *computev1alpha.Instance
	ratio float64
}

// randomQuantity returns an amount of name written in one of the ways a
// template may write it: cpu as cores or millicores, memory in binary or
// decimal units or bytes.
func randomQuantity(rng *rand.Rand, name corev1.ResourceName) resource.Quantity {
	if name == corev1.ResourceCPU {
		m := 1 + rng.Int64N(1200)
		switch rng.IntN(3) {
		case 0:
			return resource.MustParse(fmt.Sprintf("%dm", m))
		case 1:
			return resource.MustParse(fmt.Sprintf("%d", 1+m/1000))
		default:
			return resource.MustParse(fmt.Sprintf("%.4f", float64(m)/1000))
		}
	}
	switch rng.IntN(4) {
	case 0:
		return resource.MustParse(fmt.Sprintf("%dMi", 1+rng.IntN(1536)))
	case 1:
		return resource.MustParse(fmt.Sprintf("%dGi", 1+rng.IntN(2)))
	case 2:
		return resource.MustParse(fmt.Sprintf("%dM", 1+rng.IntN(1500)))
	default:
		return resource.MustParse(fmt.Sprintf("%d", 1+rng.Int64N(1<<29)))
	}
}

// randomContainerResources returns limits only, requests only, both (the
// request no more than the limit) or neither, for each resource on its own.
func randomContainerResources(rng *rand.Rand) *computev1alpha.ContainerResourceRequirements {
	if rng.IntN(5) == 0 {
		return nil
	}
	out := &computev1alpha.ContainerResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	for _, name := range sizeResources {
		a, b := randomQuantity(rng, name), randomQuantity(rng, name)
		if a.Cmp(b) > 0 {
			a, b = b, a
		}
		switch rng.IntN(4) {
		case 0:
			out.Limits[name] = b
		case 1:
			out.Requests[name] = b
		case 2:
			out.Limits[name], out.Requests[name] = b, a
		}
	}
	return out
}

// randomShape returns an Instance of 1 to 4 containers of random sizes, a
// random type (sometimes one the catalog lacks), with and without runtime
// requests, and a random allocation ratio.
func randomShape(rng *rand.Rand) shape {
	types := []string{"datumcloud-d1-standard-2", "datumcloud/d1-standard-4", "datumcloud-d1-standard-8", "datumcloud-d1-standard-16", "acme/huge"}
	b := makeInst().with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Resources.InstanceType = types[rng.IntN(len(types))]
		if rng.IntN(3) == 0 {
			i.Spec.Runtime.Resources.Requests = corev1.ResourceList{}
			for _, name := range sizeResources {
				if rng.IntN(2) == 0 {
					i.Spec.Runtime.Resources.Requests[name] = randomQuantity(rng, name)
				}
			}
		}
	}).first(func(c *computev1alpha.SandboxContainer) { c.Resources = randomContainerResources(rng) })
	for k := range rng.IntN(4) {
		b.container(computev1alpha.SandboxContainer{Name: fmt.Sprintf("c%d", k), Image: "img", Resources: randomContainerResources(rng)})
	}
	return shape{inst: b.build(), ratio: []float64{1, 1, 2, 3, 32}[rng.IntN(5)]}
}

// claimed returns the amount of a resource type a claim requests.
func claimed(claim *quotav1alpha1.ResourceClaim, resourceType string) int64 {
	for _, r := range claim.Spec.Requests {
		if r.ResourceType == resourceType {
			return r.Amount
		}
	}
	return -1
}

// stated returns what a container states of name for itself (its limit,
// else its request), in millicores or MiB rounded up; false when nothing.
func stated(c *computev1alpha.SandboxContainer, name corev1.ResourceName) (int64, bool) {
	if c.Resources == nil {
		return 0, false
	}
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := list[name]; ok && q.Sign() > 0 {
			if name == corev1.ResourceCPU {
				return q.MilliValue(), true
			}
			return (q.Value() + sizing.Mebibyte - 1) / sizing.Mebibyte, true
		}
	}
	return 0, false
}

// instanceSizeOf returns the instance's size of name in millicores or MiB
// (its runtime requests, else its type), false when the catalog lacks its
// type.
func instanceSizeOf(inst *computev1alpha.Instance, name corev1.ResourceName) (int64, bool) {
	rr := inst.Spec.Runtime.Resources
	q, ok := rr.Requests[name]
	if !ok {
		it := testTypes.Find(rr.InstanceType)
		if it == nil {
			return 0, false
		}
		q = it.Spec.Resources.CPU
		if name == corev1.ResourceMemory {
			q = it.Spec.Resources.Memory
		}
	}
	return sizing.Amount(name, q), true
}

// TestTheClaimIsWhatThePodGets holds, over random container shapes, that
// the quota claim of an Instance and the Pod the provider builds for it
// come from one size: both refuse alike, the claim's vCPU and memory are
// the sums of the Pod containers' limits, a container stating its own size
// (limit, else request) gets exactly that, and requests are the limits at
// the allocation ratio.
func TestTheClaimIsWhatThePodGets(t *testing.T) {
	const seed, n = 39, 3000
	rng := rand.New(rand.NewPCG(seed, seed))
	refused := 0
	for k := range n {
		s := randomShape(rng)
		claim, claimErr := quota.BuildClaim(s.inst, testTypes, quota.Target{Project: "p", Namespace: "ns"}, "cell")
		pod, podErr := podFor(s.inst, s.ratio)
		if (claimErr == nil) != (podErr == nil) {
			t.Fatalf("shape %d (seed %d): the claim and the Pod disagree: claim error %v, Pod error %v; spec %+v", k, seed, claimErr, podErr, s.inst.Spec.Runtime)
		}
		if claimErr != nil {
			refused++
			if !errors.Is(claimErr, sizing.ErrUnsizable) || podErr.Error() != claimErr.Error() {
				t.Fatalf("shape %d: the refusals differ: claim %q, Pod %q", k, claimErr, podErr)
			}
			continue
		}
		checkPodAgainstClaim(t, k, s, pod, claim)
	}
	t.Logf("%d shapes (seed %d), %d refused by both", n, seed, refused)
	if refused == 0 || refused == n {
		t.Errorf("%d of %d shapes refused: the generator does not cover both outcomes", refused, n)
	}
}

// checkPodAgainstClaim checks one admitted shape (see
// TestTheClaimIsWhatThePodGets).
func checkPodAgainstClaim(t *testing.T, k int, s shape, pod *corev1.Pod, claim *quotav1alpha1.ResourceClaim) {
	t.Helper()
	var cpu, mem int64
	for i, c := range pod.Spec.Containers {
		lim := c.Resources.Limits
		cpu += lim.Cpu().MilliValue()
		if lim.Memory().Value()%sizing.Mebibyte != 0 {
			t.Fatalf("shape %d: container %q memory limit %s is not whole MiB", k, c.Name, lim.Memory())
		}
		mem += lim.Memory().Value() / sizing.Mebibyte
		want := requests(lim, s.ratio)
		for _, name := range sizeResources {
			l, r := lim[name], c.Resources.Requests[name]
			if w := want[name]; r.Cmp(w) != 0 || r.Sign() <= 0 || r.Cmp(l) > 0 || s.ratio == 1 && r.Cmp(l) != 0 {
				t.Fatalf("shape %d: container %q %s request %s for limit %s at ratio %g; want %s", k, c.Name, name, r.String(), l.String(), s.ratio, w.String())
			}
			if own, ok := stated(&s.inst.Spec.Runtime.Sandbox.Containers[i], name); ok && own != sizing.Amount(name, l) {
				t.Fatalf("shape %d: container %q states %s %d for itself but its Pod's limit is %s", k, c.Name, name, own, l.String())
			}
		}
	}
	for _, name := range sizeResources {
		total := cpu
		if name == corev1.ResourceMemory {
			total = mem
		}
		if size, ok := instanceSizeOf(s.inst, name); ok && total > size {
			t.Fatalf("shape %d: the Pod's containers are limited to %d of %s, more than the instance's %d", k, total, name, size)
		}
	}
	if got := claimed(claim, computev1alpha.ResourceTypeVCPUs); got != cpu {
		t.Fatalf("shape %d: the claim asks %dm vCPU, the Pod's containers are limited to %dm", k, got, cpu)
	}
	if got := claimed(claim, computev1alpha.ResourceTypeMemory); got != mem {
		t.Fatalf("shape %d: the claim asks %d MiB, the Pod's containers are limited to %d MiB", k, got, mem)
	}
}

// TestARequestsOnlyContainerGetsAndClaimsItsRequests is the case of issue
// 39: a container stating only requests runs at them and its claim is
// them, not the instance type; one asking for more than its type is
// refused by both, naming the field.
func TestARequestsOnlyContainerGetsAndClaimsItsRequests(t *testing.T) {
	small := makeInst().first(func(c *computev1alpha.SandboxContainer) {
		c.Resources = &computev1alpha.ContainerResourceRequirements{Requests: res("500m", "1Gi")}
	}).build()
	pod, err := podFor(small, 1)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := quota.BuildClaim(small, testTypes, quota.Target{Project: "p", Namespace: "ns"}, "cell")
	if err != nil {
		t.Fatal(err)
	}
	lim := pod.Spec.Containers[0].Resources.Limits
	if lim.Cpu().MilliValue() != 500 || lim.Memory().Value() != 1<<30 ||
		claimed(claim, computev1alpha.ResourceTypeVCPUs) != 500 || claimed(claim, computev1alpha.ResourceTypeMemory) != 1024 {
		t.Errorf("Pod limits %v, claim %v; want 500m and 1Gi for both", lim, claim.Spec.Requests)
	}

	big := makeInst().first(func(c *computev1alpha.SandboxContainer) {
		c.Resources = &computev1alpha.ContainerResourceRequirements{Requests: res("16", "64Gi")}
	}).build()
	const want = `spec.runtime.sandbox.containers[0].resources.requests.cpu: container "app" asks for 16 cpu, more than the instance's 1 cpu (instance type datumcloud/d1-standard-2)`
	if _, err := podFor(big, 1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Pod error = %v, want one containing %q", err, want)
	}
	if _, err := quota.BuildClaim(big, testTypes, quota.Target{Project: "p", Namespace: "ns"}, "cell"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("claim error = %v, want one containing %q", err, want)
	}
}
