package podevents

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOneOOMKillIsOneEvent(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-dfw-0", UID: "pod-uid"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}},
			{Name: "side"},
		}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: ReasonOOMKilled, ExitCode: 137, ContainerID: "containerd://ABCDEF0123456789"}}},
			{Name: "side", LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}},
		}},
	}
	evs := OOMKills(pod)
	if len(evs) != 1 {
		t.Fatalf("%d events, want one (only app was killed for memory)", len(evs))
	}
	ev := evs[0]
	if ev.Name != "web-dfw-0.oomkilled.app.abcdef012345" {
		t.Errorf("name %q: want the Pod, the container and the killed container's ID", ev.Name)
	}
	for _, want := range []string{"Container app was killed: it ran out of memory", "its limit is 32Mi", "exit code 137", "restarted 2 times"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("message %q does not say %q", ev.Message, want)
		}
	}
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID != "pod-uid" || ev.InvolvedObject.FieldPath != "spec.containers{app}" {
		t.Errorf("event %+v", ev)
	}
	if again := OOMKills(pod); again[0].Name != ev.Name {
		t.Error("the same kill seen again has another name: it would be two events")
	}
}
