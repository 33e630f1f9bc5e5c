package kubernetes

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

// want is what a case expects of an outcome: the reasons and statuses of
// Programmed and Available, words their messages must hold, the action,
// the address and hash reported.
type want struct {
	programmed, available string // "True/Reason" or "False/Reason"
	says                  []string
	action                action
	requeue               bool
	podIP, hash           string
}

func check(t *testing.T, got outcome, w want) {
	t.Helper()
	status := func(c metav1.Condition) string { return string(c.Status) + "/" + c.Reason }
	gotSummary := want{programmed: status(got.programmed), available: status(got.available), action: got.action,
		requeue: got.requeueAfter > 0, podIP: got.podIP, hash: got.hash, says: w.says}
	if diff := cmp.Diff(w, gotSummary, cmp.AllowUnexported(want{})); diff != "" {
		t.Errorf("outcome (-want +got):\n%s\nprogrammed: %s\navailable: %s", diff, got.programmed.Message, got.available.Message)
	}
	if got.programmed.Type != computev1alpha.ConditionProgrammed || got.available.Type != computev1alpha.ConditionAvailable {
		t.Errorf("condition types = %q, %q", got.programmed.Type, got.available.Type)
	}
	for _, s := range w.says {
		if !strings.Contains(got.available.Message, s) {
			t.Errorf("Available's message %q does not say %q", got.available.Message, s)
		}
	}
}

func TestDecide(t *testing.T) {
	const recheck = 10 * time.Second
	tests := map[string]struct {
		inst *computev1alpha.Instance
		obs  observation
		want want
	}{
		"no pod yet: create one, provisioning": {
			obs:  observation{},
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", action: create},
		},
		"a pod just created that the cache does not show yet: wait for it": {
			obs:  observation{creating: time.Second},
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", requeue: true},
		},
		"a missing ConfigMap: refused, naming it, and looked at again": {
			obs: observation{missing: []reference{{kind: referenceddata.KindConfigMap, object: "configmap.app", source: "app"}}},
			want: want{programmed: "False/ConfigurationError", available: "False/ConfigurationError", requeue: true,
				says: []string{`ConfigMap "configmap.app" (the cell's copy of the project's ConfigMap "app") does not exist in namespace ns`}},
		},
		"a virtual machine: refused, no pod": {
			inst: makeInst().vm().build(),
			obs:  observation{problem: ErrVirtualMachine.Error()},
			want: want{programmed: "False/ConfigurationError", available: "False/ConfigurationError",
				says: []string{"the kubernetes runtime provider runs containers only"}},
		},
		"a pod of an instance that cannot run is deleted": {
			obs: observation{problem: "boom", pod: makePod().build()},
			want: want{programmed: "False/ConfigurationError", available: "False/ConfigurationError", action: remove,
				says: []string{"boom"}},
		},
		"a pod of an earlier instance of the same name is replaced": {
			obs:  observation{pod: makePod().owner("uid-0").on("node-a").running(true).build()},
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", action: remove, says: []string{"earlier instance"}},
		},
		"a pod of an earlier instance being deleted is waited for": {
			obs:  observation{pod: makePod().owner("uid-0").deleting().build()},
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", says: []string{"to be deleted"}},
		},
		"a pod of another template is replaced": {
			obs: observation{pod: makePod().hash("h0").on("node-a").running(true).build()},
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", action: remove, podIP: "10.244.0.7", hash: "h0",
				says: []string{`template "h0"`, `template "h1"`}},
		},
		"a pod that stopped for good is replaced": {
			obs: observation{pod: makePod().on("node-a").phase(corev1.PodFailed).with(func(p *corev1.Pod) {
				p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
			}).build()},
			want: want{programmed: "False/Provisioning", available: "False/NotAvailable", action: remove, hash: "h1",
				says: []string{"Evicted: The node was low on resource: memory."}},
		},
		"its own pod being deleted by someone else: not available until replaced": {
			obs:  observation{pod: makePod().on("node-a").running(true).deleting().build()},
			want: want{programmed: "False/Provisioning", available: "False/NotAvailable", podIP: "10.244.0.7", hash: "h1"},
		},
		"its own pod being deleted on a lost node: the node is not reachable": {
			obs:  observation{pod: makePod().on("node-a").running(true).deleting().phase(corev1.PodUnknown).build()},
			want: want{programmed: "False/Provisioning", available: "False/NodeUnreachable", podIP: "10.244.0.7", hash: "h1"},
		},
		"a running, ready pod: available with its address and hash": {
			obs:  observation{pod: makePod().on("node-a").running(true).build()},
			want: want{programmed: "True/Programmed", available: "True/Available", podIP: "10.244.0.7", hash: "h1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inst := tc.inst
			if inst == nil {
				inst = makeInst().build()
			}
			check(t, decide(inst, tc.obs, recheck), tc.want)
		})
	}
}

func TestPodConditions(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"created, not scheduled yet: provisioning": {
			pod:  makePod().build(),
			want: want{programmed: "False/Provisioning", available: "False/Provisioning", says: []string{"waiting for the scheduler"}},
		},
		"unschedulable: the scheduler's message": {
			pod: makePod().unschedulable("0/3 nodes are available: 3 Insufficient cpu.").build(),
			want: want{programmed: "False/Unschedulable", available: "False/Unschedulable",
				says: []string{"the pod cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu."}},
		},
		"scheduled, containers being created: provisioning on the node": {
			pod: makePod().on("node-a").phase(corev1.PodPending).waiting("ContainerCreating", "").build(),
			want: want{programmed: "True/Programmed", available: "False/Provisioning",
				says: []string{`the pod is starting on node node-a`}},
		},
		"a container waiting for another reason is named with it": {
			pod: makePod().on("node-a").phase(corev1.PodPending).waiting("ContainerStatusUnknown", "").build(),
			want: want{programmed: "True/Programmed", available: "False/Provisioning",
				says: []string{`the pod is starting on node node-a: container "app": ContainerStatusUnknown`}},
		},
		"an image that cannot be pulled": {
			pod: makePod().on("node-a").phase(corev1.PodPending).waiting("ErrImagePull", `failed to pull and unpack image "ghcr.io/x/app:1": not found`).build(),
			want: want{programmed: "True/Programmed", available: "False/ImageUnavailable",
				says: []string{`container "app" cannot pull image "ghcr.io/x/app:1": failed to pull and unpack image "ghcr.io/x/app:1": not found`}},
		},
		"backing off an image pull says the same as the pull": {
			pod: makePod().on("node-a").phase(corev1.PodPending).waiting("ImagePullBackOff",
				`Back-off pulling image "ghcr.io/x/app:1": ErrImagePull: failed to pull and unpack image "ghcr.io/x/app:1": not found`).build(),
			want: want{programmed: "True/Programmed", available: "False/ImageUnavailable",
				says: []string{`cannot pull image "ghcr.io/x/app:1": failed to pull and unpack image "ghcr.io/x/app:1": not found`}},
		},
		"an invalid image name": {
			pod:  makePod().on("node-a").phase(corev1.PodPending).waiting("InvalidImageName", `couldn't parse image name "UPPER"`).build(),
			want: want{programmed: "True/Programmed", available: "False/ImageUnavailable", says: []string{`couldn't parse image name "UPPER"`}},
		},
		"a crash loop: the exit code and the restart count": {
			pod: makePod().on("node-a").running(false).container(crashed(3, 4)).build(),
			want: want{programmed: "True/Programmed", available: "False/InstanceCrashing",
				says: []string{`container "app" exited with code 3 (Error), restarted 4 times`}},
		},
		"a container just terminated": {
			pod: makePod().on("node-a").running(false).container(corev1.ContainerStatus{RestartCount: 1,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}).build(),
			want: want{programmed: "True/Programmed", available: "False/InstanceCrashing",
				says: []string{`exited with code 137 (OOMKilled), restarted 1 time`}},
		},
		"a container restarted after a crash and not ready yet": {
			pod: makePod().on("node-a").running(false).container(corev1.ContainerStatus{RestartCount: 2,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}).build(),
			want: want{programmed: "True/Programmed", available: "False/InstanceCrashing", says: []string{"exited with code 1 (Error), restarted 2 times"}},
		},
		"a container that crashed once and is ready again is available": {
			pod: makePod().on("node-a").running(true).container(corev1.ContainerStatus{RestartCount: 1, Ready: true,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}).build(),
			want: want{programmed: "True/Programmed", available: "True/Available"},
		},
		"a missing ConfigMap key: a configuration error with the kubelet's message": {
			pod: makePod().on("node-a").phase(corev1.PodPending).waiting("CreateContainerConfigError", `couldn't find key mode in ConfigMap ns/configmap.app`).build(),
			want: want{programmed: "True/Programmed", available: "False/ConfigurationError",
				says: []string{`container "app" cannot start: CreateContainerConfigError: couldn't find key mode in ConfigMap ns/configmap.app`}},
		},
		"running and ready: available": {
			pod:  makePod().on("node-a").running(true).build(),
			want: want{programmed: "True/Programmed", available: "True/Available", says: []string{"node-a"}},
		},
		"running, not ready: not available, with the kubelet's message": {
			pod: makePod().on("node-a").running(false).build(),
			want: want{programmed: "True/Programmed", available: "False/NotAvailable",
				says: []string{"the pod is running but not ready: containers with unready status: [app]"}},
		},
		"running, not ready, with a readiness probe: the probe is named": {
			pod: makePod().on("node-a").running(false).with(func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}
			}).build(),
			want: want{programmed: "True/Programmed", available: "False/NotAvailable",
				says: []string{"the pod is running but not ready: the readiness probe of container app does not pass (yet)"}},
		},
		"the node lifecycle controller turned Ready False: the node is not reachable": {
			pod:  makePod().on("node-a").running(true).readyCondition(corev1.ConditionFalse, "").build(),
			want: want{programmed: "True/Programmed", available: "False/NodeUnreachable", says: []string{"node node-a is not reachable"}},
		},
		"Ready False with NodeNotReady: the node is not reachable": {
			pod:  makePod().on("node-a").running(true).readyCondition(corev1.ConditionFalse, "NodeNotReady").build(),
			want: want{programmed: "True/Programmed", available: "False/NodeUnreachable"},
		},
		"the phase Unknown: the node is not reachable, even with stale failures": {
			pod:  makePod().on("node-a").phase(corev1.PodUnknown).waiting("ErrImagePull", "x").build(),
			want: want{programmed: "True/Programmed", available: "False/NodeUnreachable"},
		},
		"the reason NodeLost: the node is not reachable": {
			pod:  makePod().on("node-a").running(true).with(func(p *corev1.Pod) { p.Status.Reason = "NodeLost" }).build(),
			want: want{programmed: "True/Programmed", available: "False/NodeUnreachable"},
		},
		"the worst failure of several containers wins": {
			pod: makePod().on("node-a").running(false).with(func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "side:1"})
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
					crashedNamed("app", 2, 5),
				}
			}).build(),
			want: want{programmed: "True/Programmed", available: "False/ImageUnavailable", says: []string{`container "side" cannot pull image "side:1": ImagePullBackOff`}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			programmed, available := podConditions(tc.pod)
			check(t, outcome{programmed: programmed, available: available}, tc.want)
		})
	}
}

// crashedNamed is crashed for a container of another name.
func crashedNamed(name string, code, restarts int32) corev1.ContainerStatus {
	cs := crashed(code, restarts)
	cs.Name = name
	return cs
}

func TestMessagesAreDeterministic(t *testing.T) {
	// The kubelet reports containers in any order; the message must not
	// change with it, or every status report rewrites the Instance.
	pod := makePod().on("node-a").phase(corev1.PodPending).with(func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "side:1"})
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "side"}}},
			{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "app"}}},
		}
	}).build()
	_, a := podConditions(pod)
	pod.Status.ContainerStatuses[0], pod.Status.ContainerStatuses[1] = pod.Status.ContainerStatuses[1], pod.Status.ContainerStatuses[0]
	_, b := podConditions(pod)
	if a.Message != b.Message || !strings.Contains(a.Message, `container "app"`) {
		t.Errorf("messages differ with the order of container statuses, or do not name the first container: %q vs %q", a.Message, b.Message)
	}
}

func TestAnOrdinaryStartIsOneMessageFromScheduledToRunning(t *testing.T) {
	scheduled := makePod().on("node-a").phase(corev1.PodPending).build()
	creating := makePod().on("node-a").phase(corev1.PodPending).waiting("ContainerCreating", "").build()
	initializing := makePod().on("node-a").phase(corev1.PodPending).waiting("PodInitializing", "").build()
	_, want := podConditions(scheduled)
	for _, pod := range []*corev1.Pod{creating, initializing} {
		if _, got := podConditions(pod); got != want {
			t.Errorf("Available %+v while %s, want %+v as when just scheduled: each step would be a status write on every plane",
				got, pod.Status.ContainerStatuses[0].State.Waiting.Reason, want)
		}
	}
}
