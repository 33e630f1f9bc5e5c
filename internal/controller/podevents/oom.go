package podevents

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonOOMKilled is the reason of the event of a container killed because
// it ran out of memory.
const ReasonOOMKilled = "OOMKilled"

// OOMKills returns an event for each container of pod whose latest
// termination was an out-of-memory kill: Kubernetes records such a kill
// only as a reason in the container's status. Each is named after the
// Pod, the container and the killed container's ID, so one kill is one
// event however often it is seen.
func OOMKills(pod *corev1.Pod) []*corev1.Event {
	var out []*corev1.Event
	for _, cs := range pod.Status.ContainerStatuses {
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil || t.Reason != ReasonOOMKilled {
				continue
			}
			out = append(out, oomEvent(pod, cs, t))
			break
		}
	}
	return out
}

// oomEvent is the event of container cs of pod killed for memory, t its
// termination.
func oomEvent(pod *corev1.Pod, cs corev1.ContainerStatus, t *corev1.ContainerStateTerminated) *corev1.Event {
	at := t.FinishedAt
	if at.IsZero() {
		at = metav1.Now()
	}
	msg := fmt.Sprintf("Container %s was killed: it ran out of memory", cs.Name)
	if limit := memoryLimit(pod, cs.Name); limit != "" {
		msg += " (its limit is " + limit + ")"
	}
	msg += fmt.Sprintf("; exit code %d", t.ExitCode)
	if cs.RestartCount > 0 {
		msg += fmt.Sprintf(", restarted %d times", cs.RestartCount)
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: oomName(pod.Name, cs.Name, t.ContainerID)},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: "spec.containers{" + cs.Name + "}",
		},
		Reason: ReasonOOMKilled, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: Reporter},
		FirstTimestamp: at, LastTimestamp: at, Count: 1,
	}
}

// oomName names the event of one kill: the Pod, the container and the
// first 12 characters of the killed container's ID (without its runtime
// prefix, containerd://).
func oomName(pod, container, containerID string) string {
	id := containerID[strings.LastIndex(containerID, "/")+1:]
	if len(id) > 12 {
		id = id[:12]
	}
	if id == "" {
		id = "unknown"
	}
	return strings.ToLower(pod + ".oomkilled." + container + "." + id)
}

// memoryLimit is the memory limit of container name of pod, empty when it
// has none.
func memoryLimit(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == name {
			return q.String()
		}
	}
	return ""
}
