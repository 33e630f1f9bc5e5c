package kubernetes

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// Provider condition reasons that have no constant in the API because only
// this provider uses them. compute's Ready reports them as NotAvailable,
// with the provider's message.
const (
	// ReasonProgrammed on Programmed: the Pod is bound to a node.
	ReasonProgrammed = "Programmed"
	// ReasonUnschedulable on Programmed and Available: the scheduler
	// cannot place the Pod; the message passes on the scheduler's (which
	// resource is short, on which nodes).
	ReasonUnschedulable = "Unschedulable"
	// ReasonNodeUnreachable on Available: the node the Pod runs on stopped
	// reporting. The provider keeps the Pod (and the Instance); the
	// Instance recovers when the node is back.
	ReasonNodeUnreachable = "NodeUnreachable"
)

// action is what the provider does to the Pod of an Instance.
type action int

const (
	// keep leaves the Pod as it is (or waits for it).
	keep action = iota
	// create creates the Pod.
	create
	// remove deletes the Pod observed, to replace it or because the
	// Instance cannot run.
	remove
)

// observation is what the provider read about an Instance's Pod.
type observation struct {
	// pod is the Pod of the Instance's name the cache holds; nil when
	// there is none.
	pod *corev1.Pod
	// problem is why the provider cannot run the Instance (podFor's
	// error); empty when it can.
	problem string
	// missing are the ConfigMaps and Secrets of the cell the Pod to create
	// needs and that do not exist; read only when there is no Pod.
	missing []reference
	// creating is how much longer to wait for the Pod the provider just
	// created to reach the cache; zero when it created none.
	creating time.Duration
}

// outcome is what the provider does and reports for an Instance.
type outcome struct {
	programmed, available metav1.Condition
	// action is what to do to the Pod.
	action action
	// requeueAfter is when to look again regardless of events; zero when
	// an event will bring the Instance back.
	requeueAfter time.Duration
	// podIP is the address of the Instance's Pod; empty when it has none.
	podIP string
	// hash is the template hash of the Instance's Pod.
	hash string
}

// decide returns what to do and report for a live, ungated Instance given
// what was observed. recheck is how soon to look again for ConfigMaps and
// Secrets that are missing (nothing watches them).
func decide(inst *computev1alpha.Instance, obs observation, recheck time.Duration) outcome {
	pod := obs.pod
	var out outcome
	ours := pod != nil && ownedBy(pod, inst)
	if ours {
		out.hash = pod.Annotations[TemplateHashAnnotation]
		out.podIP = pod.Status.PodIP
	}
	switch {
	case obs.problem != "":
		out = refused(obs.problem)
		if pod != nil && pod.DeletionTimestamp == nil {
			out.action = remove
		}
	case pod == nil && obs.creating > 0:
		out.programmed, out.available = provisioning("the pod is being created")
		out.requeueAfter = obs.creating
	case pod == nil && len(obs.missing) > 0:
		out = refused(missingMessage(inst.Namespace, obs.missing))
		out.requeueAfter = recheck
	case pod == nil:
		out.programmed, out.available = provisioning("the pod is being created")
		out.action = create
	case !ours && pod.DeletionTimestamp != nil:
		out.programmed, out.available = provisioning(fmt.Sprintf("waiting for pod %s of an earlier instance of this name to be deleted", pod.Name))
	case !ours:
		out.programmed, out.available = provisioning(fmt.Sprintf("replacing pod %s of an earlier instance of this name", pod.Name))
		out.action = remove
	case pod.DeletionTimestamp != nil:
		out.programmed, out.available = provisioning("the pod is being deleted; a new one is created once it is gone")
		if lost, msg := nodeUnreachable(pod); lost {
			out.available = condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, ReasonNodeUnreachable, msg)
		} else {
			out.available.Reason = computev1alpha.ReasonNotAvailable
		}
	case out.hash != templateHash(inst):
		out.programmed, out.available = provisioning(fmt.Sprintf("replacing the pod, built from template %q, with one of template %q", out.hash, templateHash(inst)))
		out.action = remove
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		out.programmed, out.available = provisioning("replacing the pod, which stopped: " + stoppedMessage(pod))
		out.available.Reason = computev1alpha.ReasonNotAvailable
		out.action = remove
	default:
		out.programmed, out.available = podConditions(pod)
	}
	return out
}

// podConditions returns Programmed and Available for the running Pod of an
// Instance (its own, up to date, not being deleted), from the Pod alone:
// the provider reads no Nodes.
func podConditions(pod *corev1.Pod) (programmed, available metav1.Condition) {
	node := pod.Spec.NodeName
	if node == "" {
		scheduled := podCondition(pod, corev1.PodScheduled)
		if scheduled != nil && scheduled.Status == corev1.ConditionFalse && scheduled.Reason == corev1.PodReasonUnschedulable {
			msg := "the pod cannot be scheduled"
			if scheduled.Message != "" {
				msg += ": " + scheduled.Message
			}
			return condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, ReasonUnschedulable, msg),
				condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, ReasonUnschedulable, msg)
		}
		msg := "waiting for the scheduler to place the pod"
		if scheduled != nil && scheduled.Status == corev1.ConditionFalse && scheduled.Message != "" {
			msg += ": " + scheduled.Message
		}
		return provisioning(msg)
	}
	programmed = condition(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, ReasonProgrammed, fmt.Sprintf("the pod is scheduled to node %s", node))
	if lost, msg := nodeUnreachable(pod); lost {
		return programmed, condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, ReasonNodeUnreachable, msg)
	}
	if reason, msg := containerProblem(pod); reason != "" {
		return programmed, condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, reason, msg)
	}
	ready := podCondition(pod, corev1.PodReady)
	switch {
	case pod.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue:
		return programmed, condition(computev1alpha.ConditionAvailable, metav1.ConditionTrue, computev1alpha.ReasonAvailable,
			fmt.Sprintf("the pod is running and ready on node %s", node))
	case pod.Status.Phase == corev1.PodRunning:
		msg := "the pod is running but not ready"
		if probing := unreadyProbed(pod); probing != "" {
			msg += ": the readiness probe of " + probing + " does not pass (yet)"
		} else if ready != nil && ready.Message != "" {
			msg += ": " + ready.Message
		}
		return programmed, condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonNotAvailable, msg)
	default:
		msg := fmt.Sprintf("the pod is starting on node %s", node)
		if waiting := waitingContainers(pod); waiting != "" {
			msg += ": " + waiting
		}
		return programmed, condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, msg)
	}
}

// kubeletReadyReasons are the reasons the kubelet gives a Pod's Ready
// condition when it is False. The node lifecycle controller turns Ready
// False when the node stops reporting, keeping the reason it had (none,
// as the kubelet writes none on True), so any other reason means the
// kubelet did not write it.
var kubeletReadyReasons = []string{"ContainersNotReady", "ReadinessGatesNotReady", "PodCompleted"}

// nodeUnreachable reports whether the Pod's node has stopped reporting it,
// and a message saying so: its phase is Unknown, its reason is NodeLost,
// or its Ready condition was turned False (or Unknown) by someone other
// than the kubelet.
func nodeUnreachable(pod *corev1.Pod) (bool, string) {
	node := pod.Spec.NodeName
	if node == "" {
		return false, ""
	}
	const tail = "; the pod is kept, and the instance recovers when the node is back"
	switch ready := podCondition(pod, corev1.PodReady); {
	case pod.Status.Phase == corev1.PodUnknown:
		return true, fmt.Sprintf("node %s is not reachable: the state of the pod is unknown%s", node, tail)
	case pod.Status.Reason == "NodeLost":
		return true, fmt.Sprintf("node %s is not reachable: the node is lost%s", node, tail)
	case ready == nil || ready.Status == corev1.ConditionTrue:
		return false, ""
	case ready.Status == corev1.ConditionUnknown || !slices.Contains(kubeletReadyReasons, ready.Reason):
		return true, fmt.Sprintf("node %s is not reachable: it stopped reporting the pod's state%s", node, tail)
	}
	return false, ""
}

// Waiting reasons of a container, as the kubelet reports them.
var (
	// imageReasons: the image cannot be pulled.
	imageReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable", "ImageInspectError"}
	// configReasons: the container cannot be created or started as
	// configured (a ConfigMap key missing, an entrypoint not found).
	configReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PreStartHookError"}
)

// containerProblem returns the worst failure the Pod's containers report,
// in the order of the Pod's containers, with its message: ""
// when none fails.
func containerProblem(pod *corev1.Pod) (string, string) {
	var reason, msg string
	for _, cs := range orderedStatuses(pod) {
		r, m := containerFailure(pod, &cs)
		if r != "" && (reason == "" || status.Severity(r) > status.Severity(reason)) {
			reason, msg = r, m
		}
	}
	return reason, msg
}

// containerFailure returns how one container fails: ImageUnavailable,
// ConfigurationError or InstanceCrashing, or "".
func containerFailure(pod *corev1.Pod, cs *corev1.ContainerStatus) (string, string) {
	w := cs.State.Waiting
	switch {
	case w != nil && slices.Contains(imageReasons, w.Reason):
		return computev1alpha.ReasonImageUnavailable, fmt.Sprintf("container %q cannot pull image %q: %s", cs.Name, imageOf(pod, cs), pullCause(w))
	case w != nil && slices.Contains(configReasons, w.Reason):
		msg := fmt.Sprintf("container %q cannot start: %s", cs.Name, w.Reason)
		if w.Message != "" {
			msg += ": " + w.Message
		}
		return computev1alpha.ReasonConfigurationError, msg
	case cs.State.Terminated != nil:
		return computev1alpha.ReasonInstanceCrashing, crashMessage(cs.Name, cs.State.Terminated, cs.RestartCount)
	case w != nil && w.Reason == "CrashLoopBackOff", !cs.Ready && cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil:
		if t := cs.LastTerminationState.Terminated; t != nil {
			return computev1alpha.ReasonInstanceCrashing, crashMessage(cs.Name, t, cs.RestartCount)
		}
		return computev1alpha.ReasonInstanceCrashing, fmt.Sprintf("container %q keeps exiting (%s)", cs.Name, restarts(cs.RestartCount))
	}
	return "", ""
}

// crashMessage says how a container exited and how often it was
// restarted.
func crashMessage(name string, t *corev1.ContainerStateTerminated, restartCount int32) string {
	msg := fmt.Sprintf("container %q exited with code %d", name, t.ExitCode)
	if t.Reason != "" {
		msg += " (" + t.Reason + ")"
	}
	msg += ", " + restarts(restartCount)
	if t.Message != "" {
		msg += ": " + t.Message
	}
	return msg
}

// restarts says how often a container was restarted.
func restarts(n int32) string {
	if n == 1 {
		return "restarted 1 time"
	}
	return fmt.Sprintf("restarted %d times", n)
}

// pullCause returns why an image cannot be pulled, the same whether the
// kubelet is pulling (ErrImagePull) or backing off (ImagePullBackOff,
// whose message repeats the pull's), so the message does not flap.
func pullCause(w *corev1.ContainerStateWaiting) string {
	msg := w.Message
	if _, cause, ok := strings.Cut(msg, "ErrImagePull: "); ok && w.Reason == "ImagePullBackOff" {
		msg = cause
	}
	if msg == "" {
		return w.Reason
	}
	return msg
}

// imageOf returns the image of a container: the Pod's spec (what was
// asked for), else what the status reports.
func imageOf(pod *corev1.Pod, cs *corev1.ContainerStatus) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == cs.Name {
			return c.Image
		}
	}
	return cs.Image
}

// orderedStatuses returns the Pod's container statuses in the order of its
// containers (statuses of containers the spec does not name last), so
// messages do not depend on the order the kubelet reports them in.
func orderedStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	idx := func(name string) int {
		if i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return i
		}
		return len(pod.Spec.Containers)
	}
	out := slices.Clone(pod.Status.ContainerStatuses)
	slices.SortStableFunc(out, func(a, b corev1.ContainerStatus) int { return idx(a.Name) - idx(b.Name) })
	return out
}

// startingReasons are the waiting reasons of every container that starts
// normally; naming them would change the message (and cost a status write
// on every plane) at each step of an ordinary start.
var startingReasons = []string{"ContainerCreating", "PodInitializing"}

// waitingContainers names the containers still waiting for a reason other
// than an ordinary start, and why, e.g. `container "app": CreateContainerError`.
func waitingContainers(pod *corev1.Pod) string {
	var parts []string
	for _, cs := range orderedStatuses(pod) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && !slices.Contains(startingReasons, w.Reason) {
			parts = append(parts, fmt.Sprintf("container %q: %s", cs.Name, w.Reason))
		}
	}
	return strings.Join(parts, ", ")
}

// stoppedMessage says why a Pod stopped for good (Failed or Succeeded):
// evicted, its node shut down.
func stoppedMessage(pod *corev1.Pod) string {
	msg := "phase " + string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		msg += ", " + pod.Status.Reason
	}
	if pod.Status.Message != "" {
		msg += ": " + pod.Status.Message
	}
	return msg
}

// missingMessage says which ConfigMaps and Secrets of the cell are
// missing.
func missingMessage(namespace string, missing []reference) string {
	parts := make([]string, len(missing))
	for i, m := range missing {
		parts[i] = m.String()
		if m.source != "" {
			parts[i] += fmt.Sprintf(" (the cell's copy of the project's %s %q)", m.kind, m.source)
		}
	}
	verb := "does"
	if len(missing) > 1 {
		verb = "do"
	}
	return fmt.Sprintf("%s %s not exist in namespace %s of the cell; the instance starts once it is delivered, or mark the reference optional",
		strings.Join(parts, ", "), verb, namespace)
}

// ownedBy reports whether the Pod is the one of this Instance, not of an
// earlier Instance of the same name.
func ownedBy(pod *corev1.Pod, inst *computev1alpha.Instance) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID == inst.UID
		}
	}
	return false
}

// podCondition returns the Pod's condition of a type, or nil.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// suspendedConditions are Programmed and Available of a suspended
// Instance: Terminating while its Pod is still there (stopping), Suspended
// once it is gone — the provider's confirmation that nothing runs.
func suspendedConditions(podLeft bool) []metav1.Condition {
	if podLeft {
		return []metav1.Condition{
			condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the instance is being suspended: its pod is being deleted"),
			condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the instance is being suspended: its pod is being deleted"),
		}
	}
	return []metav1.Condition{
		condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the instance is suspended: it has no pod"),
		condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the instance is suspended: it has no pod"),
	}
}

// provisioning is the pair of conditions of an instance not placed yet.
func provisioning(msg string) (metav1.Condition, metav1.Condition) {
	return condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, msg),
		condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, msg)
}

// refused is the outcome of an Instance the provider cannot run.
func refused(msg string) outcome {
	return outcome{
		programmed: condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, msg),
		available:  condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, msg),
	}
}

// condition builds a provider condition.
func condition(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
}

// unreadyProbed names the running containers of a Pod that have a
// readiness probe and are not ready, comma-separated; empty for none.
func unreadyProbed(pod *corev1.Pod) string {
	probed := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		probed[c.Name] = c.ReadinessProbe != nil
	}
	var names []string
	for _, cs := range pod.Status.ContainerStatuses {
		if probed[cs.Name] && !cs.Ready && cs.State.Running != nil {
			names = append(names, "container "+cs.Name)
		}
	}
	return strings.Join(names, ", ")
}
