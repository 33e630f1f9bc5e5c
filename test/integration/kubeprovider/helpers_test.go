package kubeprovider

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// timeout bounds every wait: the provider answers in well under a second,
// a loaded machine in a few.
const timeout = 30 * time.Second

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-provider-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	return ns.Name
}

// instBuilder builds Instances.
type instBuilder struct{ i *computev1alpha.Instance }

// makeInstance returns an Instance of one container, of the default
// instance type (1 vCPU, 2 GiB), template hash "h1".
func makeInstance(ns, name string) *instBuilder {
	return &instBuilder{i: &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: computev1alpha.InstanceSpec{
			Runtime: computev1alpha.InstanceRuntimeSpec{
				Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
				Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
					Name: "app", Image: "ghcr.io/citycells/hello:1.0",
				}}},
			},
			Controller: &computev1alpha.InstanceController{TemplateHash: "h1"},
		},
	}}
}

func (b *instBuilder) with(f func(*computev1alpha.Instance)) *instBuilder {
	f(b.i)
	return b
}

// create creates the Instance and returns it.
func (b *instBuilder) create(t *testing.T) *computev1alpha.Instance {
	t.Helper()
	if err := k8s.Create(context.Background(), b.i); err != nil {
		t.Fatalf("failed to create Instance: %v", err)
	}
	return b.i
}

// getInstance reads an Instance.
func getInstance(g Gomega, inst *computev1alpha.Instance) *computev1alpha.Instance {
	cur := &computev1alpha.Instance{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), cur)).To(Succeed())
	return cur
}

// condition returns a condition of an Instance, or an empty one.
func condition(inst *computev1alpha.Instance, t string) metav1.Condition {
	if c := meta.FindStatusCondition(inst.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// expectReports waits until the Instance reports Available with status st
// and reason, its message holding every word of says, and returns it.
func expectReports(t *testing.T, inst *computev1alpha.Instance, st metav1.ConditionStatus, reason string, says ...string) *computev1alpha.Instance {
	t.Helper()
	var cur *computev1alpha.Instance
	NewWithT(t).Eventually(func(g Gomega) {
		cur = getInstance(g, inst)
		c := condition(cur, computev1alpha.ConditionAvailable)
		g.Expect(c.Status).To(Equal(st), "Available: %+v", c)
		g.Expect(c.Reason).To(Equal(reason), "Available: %+v", c)
		for _, s := range says {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}).WithTimeout(timeout).Should(Succeed())
	return cur
}

// waitPod waits for the Pod of an Instance (of its current UID) and
// returns it.
func waitPod(t *testing.T, inst *computev1alpha.Instance) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), pod)).To(Succeed())
		g.Expect(metav1.GetControllerOf(pod)).NotTo(BeNil())
		g.Expect(metav1.GetControllerOf(pod).UID).To(Equal(inst.UID))
	}).WithTimeout(timeout).Should(Succeed())
	return pod
}

// bind plays the scheduler: it binds the Pod to a node.
func bind(t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := k8s.SubResource("binding").Create(context.Background(), pod, b); err != nil {
		t.Fatalf("failed to bind Pod %s to %s: %v", pod.Name, node, err)
	}
}

// setStatus plays the kubelet (or the scheduler): it changes the Pod's
// status through the status subresource.
func setStatus(t *testing.T, pod *corev1.Pod, f func(*corev1.PodStatus)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), cur)).To(Succeed())
		f(&cur.Status)
		g.Expect(k8s.Status().Update(context.Background(), cur)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
}

// running is the status the kubelet writes for a Pod whose only container
// runs, ready or not, with an address.
func running(ip string, ready bool) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		readiness := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
		if !ready {
			readiness = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
				Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}
		}
		s.Phase = corev1.PodRunning
		s.PodIP, s.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		s.HostIP, s.HostIPs = "192.168.1.10", []corev1.HostIP{{IP: "192.168.1.10"}}
		s.Conditions = setPodCondition(s.Conditions, readiness)
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0", Ready: ready, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}}
	}
}

// waiting is the status of a Pod whose only container waits.
func waiting(phase corev1.PodPhase, reason, msg string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Phase = phase
		s.Conditions = setPodCondition(s.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
			Reason: "ContainersNotReady", Message: "containers with unready status: [app]"})
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}
	}
}

// setPodCondition puts c into conditions.
func setPodCondition(conds []corev1.PodCondition, c corev1.PodCondition) []corev1.PodCondition {
	c.LastTransitionTime = metav1.Now()
	for i := range conds {
		if conds[i].Type == c.Type {
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}

// confirmDeletion plays the kubelet once the provider has deleted a Pod
// bound to a node: the API keeps such a Pod until its kubelet says its
// containers stopped, which a deletion with no grace period stands for.
func confirmDeletion(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		cur := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), cur)).To(Succeed())
		g.Expect(cur.UID).To(Equal(pod.UID))
		g.Expect(cur.DeletionTimestamp).NotTo(BeNil(), "the provider has not deleted the Pod")
	}).WithTimeout(timeout).Should(Succeed())
	err := k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
}
