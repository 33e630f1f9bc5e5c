package kubeprovider

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/podevents"
)

// hubCopy writes the hub copy of cell Instance inst in city, as the
// write-back writes it (same namespace and name, its source UID), and
// returns it.
func hubCopy(t *testing.T, inst *computev1alpha.Instance, city string) *computev1alpha.Instance {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inst.Namespace}}
	if err := hubClient.Create(ctx, ns); err != nil {
		t.Fatalf("failed to create hub namespace: %v", err)
	}
	c := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: inst.Name,
			Labels:      map[string]string{computev1alpha.CityCodeLabel: city, computev1alpha.WorkloadNameLabel: "web"},
			Annotations: map[string]string{computev1alpha.SourceUIDAnnotation: string(inst.UID)}},
		Spec: inst.Spec,
	}
	if err := hubClient.Create(ctx, c); err != nil {
		t.Fatalf("failed to create the hub copy: %v", err)
	}
	return c
}

// kubeletEvent writes an event of the cell's kubelet regarding pod.
func kubeletEvent(t *testing.T, pod *corev1.Pod, name, reason, msg string, at time.Time) *corev1.Event {
	t.Helper()
	now := metav1.NewTime(at)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: "spec.containers{app}"},
		Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := k8s.Create(context.Background(), ev); err != nil {
		t.Fatalf("failed to write the kubelet's event: %v", err)
	}
	return ev
}

// hubEvent is the hub event of that name, once it exists.
func hubEvent(g Gomega, namespace, name string) *corev1.Event {
	ev := &corev1.Event{}
	g.Expect(hubClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, ev)).To(Succeed())
	return ev
}

// TestThePodsEventsReachTheHubAsTheInstancesEvents: what the kubelet says
// about an Instance's Pod, and an out-of-memory kill its status shows,
// become events of the Instance's hub copy, labelled with the cell's city;
// a repeated kubelet event updates its one hub event; an event of another
// Pod of the name (an earlier Instance's) is not carried.
func TestThePodsEventsReachTheHubAsTheInstancesEvents(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-dfw-0").create(t)
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	copyOf := hubCopy(t, inst, "DFW")

	t.Log("the kubelet's back-off event reaches the hub, regarding the copy, with the city")
	backOff := kubeletEvent(t, pod, "web-dfw-0.backoff", "BackOff", "Back-off restarting failed container app", time.Now())
	g.Eventually(func(g Gomega) {
		ev := hubEvent(g, ns, backOff.Name)
		g.Expect(ev.InvolvedObject.Kind).To(Equal(computev1alpha.InstanceKind))
		g.Expect(ev.InvolvedObject.UID).To(Equal(copyOf.UID))
		g.Expect(ev.InvolvedObject.FieldPath).To(Equal("spec.containers{app}"))
		g.Expect(ev.Labels).To(HaveKeyWithValue(computev1alpha.CityCodeLabel, "DFW"))
		g.Expect(ev.Labels).To(HaveKeyWithValue(computev1alpha.WorkloadNameLabel, "web"))
		g.Expect(ev.Source.Host).To(BeEmpty(), "a node's name is the cell's, not the tenant's")
		g.Expect(ev.Count).To(BeEquivalentTo(1))
	}, timeout, 100*time.Millisecond).Should(Succeed())

	t.Log("the kubelet counts it again: the one hub event follows")
	again := backOff.DeepCopy()
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(backOff), again)).To(Succeed())
	again.Count, again.LastTimestamp = 4, metav1.NewTime(time.Now().Add(time.Second))
	g.Expect(k8s.Update(context.Background(), again)).To(Succeed())
	g.Eventually(func() int32 { return hubEventCount(ns, backOff.Name) }, timeout, 100*time.Millisecond).Should(BeEquivalentTo(4))

	t.Log("the container is killed for memory: an OOMKilled event, once")
	setStatus(t, pod, func(s *corev1.PodStatus) {
		running("10.244.1.9", false)(s)
		s.ContainerStatuses[0].RestartCount = 1
		s.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: podevents.ReasonOOMKilled, FinishedAt: metav1.Now(), ContainerID: "containerd://0123456789abcdef"}}
	})
	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(hubClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var oom []corev1.Event
		for _, ev := range list.Items {
			if ev.Reason == podevents.ReasonOOMKilled {
				oom = append(oom, ev)
			}
		}
		g.Expect(oom).To(HaveLen(1))
		g.Expect(oom[0].Message).To(ContainSubstring("Container app was killed: it ran out of memory"))
		g.Expect(oom[0].InvolvedObject.UID).To(Equal(copyOf.UID))
	}, timeout, 100*time.Millisecond).Should(Succeed())

	t.Log("an event older than the Instance (an earlier Instance's Pod of the name) is not carried")
	old := kubeletEvent(t, pod, "web-dfw-0.earlier", "Killing", "Stopping container app", inst.CreationTimestamp.Add(-time.Hour))
	g.Consistently(func() error {
		return hubClient.Get(context.Background(), client.ObjectKeyFromObject(old), &corev1.Event{})
	}, 2*time.Second, 200*time.Millisecond).ShouldNot(Succeed())
}

// hubEventCount is the count of the hub event of that name, zero when it
// cannot be read.
func hubEventCount(namespace, name string) int32 {
	ev := &corev1.Event{}
	if err := hubClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, ev); err != nil {
		return 0
	}
	return ev.Count
}
