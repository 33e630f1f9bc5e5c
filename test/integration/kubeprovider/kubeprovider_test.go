package kubeprovider

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/provider/kubernetes"
	"github.com/citycells/compute/internal/referenceddata"
)

func TestAnInstanceRunsAsAPodBuiltFromItsSpec(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-4"
		c := &i.Spec.Runtime.Sandbox.Containers[0]
		c.Command, c.Args = []string{"/hello"}, []string{"--listen=:8080"}
		c.Env = []computev1alpha.EnvVar{
			{Name: "GREETING", Value: "hi"},
			{Name: "TOKEN", ValueFrom: &computev1alpha.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token", Optional: ptr.To(true)}}},
		}
		c.Ports = []computev1alpha.NamedPort{{Name: "http", Port: 8080}}
	}).create(t)

	pod := waitPod(t, inst)
	t.Log("the Pod is the Instance's: same name, controlled by it, labelled, annotated with its template")
	g.Expect(pod.Labels).To(HaveKeyWithValue(kubernetes.InstanceLabel, "web-0"))
	g.Expect(pod.Labels).To(HaveKeyWithValue("app", "web-0"))
	g.Expect(pod.Annotations).To(HaveKeyWithValue(kubernetes.TemplateHashAnnotation, "h1"))
	owner := metav1.GetControllerOf(pod)
	g.Expect(owner.Kind).To(Equal("Instance"))
	g.Expect(owner.Name).To(Equal("web-0"))
	g.Expect(owner.UID).To(Equal(inst.UID))
	g.Expect(pod.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
	g.Expect(pod.Spec.EnableServiceLinks).To(Equal(ptr.To(false)))
	g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyAlways))

	t.Log("the container has the image, command, env, ports and the instance type's resources, requested and limited")
	g.Expect(pod.Spec.Containers).To(HaveLen(1))
	c := pod.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/citycells/hello:1.0"))
	g.Expect(c.Command).To(Equal([]string{"/hello"}))
	g.Expect(c.Args).To(Equal([]string{"--listen=:8080"}))
	g.Expect(c.Env).To(ConsistOf(
		corev1.EnvVar{Name: "COMPUTE_INSTANCE_NAME", Value: "web-0"},
		corev1.EnvVar{Name: "GREETING", Value: "hi"},
		corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "secret.api"}, Key: "token", Optional: ptr.To(true)}}},
	))
	g.Expect(c.Ports).To(Equal([]corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}))
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	g.Expect(c.Resources.Requests).To(Equal(want))
	g.Expect(c.Resources.Limits).To(Equal(want))

	t.Log("the Instance holds the provider's finalizer and is provisioning until the Pod is placed")
	cur := expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the scheduler")
	g.Expect(cur.Finalizers).To(ContainElement(kubernetes.Finalizer))
}

func TestARunningReadyPodMakesTheInstanceAvailableAtItsAddress(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").with(func(i *computev1alpha.Instance) {
		i.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{
			{Name: "eth0", Network: computev1alpha.NetworkReference{Name: "default"}},
			{Name: "eth1", Network: computev1alpha.NetworkReference{Name: "backend"}},
		}
	}).create(t)
	pod := waitPod(t, inst)

	bind(t, pod, "node-a")
	cur := expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the pod is starting on node node-a")
	g.Expect(condition(cur, computev1alpha.ConditionProgrammed).Status).To(Equal(metav1.ConditionTrue))

	setStatus(t, pod, running("10.244.1.7", false))
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonNotAvailable, "containers with unready status: [app]")

	setStatus(t, pod, running("10.244.1.7", true))
	cur = expectReports(t, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)
	t.Log("the first interface gets the Pod's address, the second none; the running template is reported")
	g.Expect(cur.Status.NetworkInterfaces).To(HaveLen(2))
	g.Expect(cur.Status.NetworkInterfaces[0].Assignments.NetworkIP).To(Equal(ptr.To("10.244.1.7")))
	g.Expect(cur.Status.NetworkInterfaces[1].Assignments.NetworkIP).To(BeNil())
	g.Expect(cur.Status.Controller).NotTo(BeNil())
	g.Expect(cur.Status.Controller.ObservedTemplateHash).To(Equal("h1"))

	t.Log("compute's own Ready follows, written by the Instance controller beside the provider's conditions")
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getInstance(g, inst), computev1alpha.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
}

func TestAnImageThatCannotBePulledIsImageUnavailable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	setStatus(t, pod, waiting(corev1.PodPending, "ErrImagePull",
		`failed to pull and unpack image "ghcr.io/citycells/hello:1.0": failed to resolve reference: not found`))
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable,
		`container "app" cannot pull image "ghcr.io/citycells/hello:1.0"`, "failed to resolve reference: not found")
}

func TestACrashLoopIsInstanceCrashingWithTheExitCode(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	setStatus(t, pod, func(s *corev1.PodStatus) {
		running("10.244.1.8", false)(s)
		s.ContainerStatuses[0].RestartCount = 4
		s.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container=app"}}
		s.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 3, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}
	})
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonInstanceCrashing,
		`container "app" exited with code 3 (Error), restarted 4 times`)
}

func TestAnUnschedulablePodPassesOnTheSchedulersMessage(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	pod := waitPod(t, inst)
	const msg = "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	setStatus(t, pod, func(s *corev1.PodStatus) {
		s.Conditions = setPodCondition(s.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg})
	})
	cur := expectReports(t, inst, metav1.ConditionFalse, kubernetes.ReasonUnschedulable, "the pod cannot be scheduled: "+msg)
	g.Expect(condition(cur, computev1alpha.ConditionProgrammed).Reason).To(Equal(kubernetes.ReasonUnschedulable))
}

func TestANodeThatStopsReportingLeavesThePodAndTheInstance(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	setStatus(t, pod, running("10.244.1.9", true))
	expectReports(t, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

	t.Log("the node lifecycle controller turns Ready False, keeping the kubelet's (empty) reason")
	setStatus(t, pod, func(s *corev1.PodStatus) {
		s.Conditions = setPodCondition(s.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	})
	expectReports(t, inst, metav1.ConditionFalse, kubernetes.ReasonNodeUnreachable, "node node-a is not reachable")
	g.Consistently(func(g Gomega) {
		cur := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), cur)).To(Succeed())
		g.Expect(cur.UID).To(Equal(pod.UID))
		g.Expect(cur.DeletionTimestamp).To(BeNil())
	}).WithTimeout(time.Second).Should(Succeed())
}

func TestAVirtualMachineIsRefusedWithoutAPod(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "vm-0").with(func(i *computev1alpha.Instance) {
		i.Spec.Runtime.Sandbox = nil
		i.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "boot"}}}
		i.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "boot", Disk: &computev1alpha.DiskTemplateVolumeSource{
			Template: &computev1alpha.DiskTemplateVolumeSourceTemplate{Spec: computev1alpha.DiskSpec{
				Populator: &computev1alpha.DiskPopulator{Image: &computev1alpha.ImageDiskPopulator{Name: "datumcloud/ubuntu-2204-lts"}}}}}}}
	}).create(t)
	cur := expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, "the kubernetes runtime provider runs containers only")
	g.Expect(condition(cur, computev1alpha.ConditionProgrammed).Reason).To(Equal(computev1alpha.ReasonConfigurationError))
	g.Expect(cur.Finalizers).NotTo(ContainElement(kubernetes.Finalizer))
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Pod for a virtual machine: %v", err)
}

func TestDeletingAnInstanceDeletesItsPodFirst(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	t.Run("a Pod on a node goes once its kubelet confirms", func(t *testing.T) {
		g := NewWithT(t)
		inst := makeInstance(ns, "placed-0").create(t)
		pod := waitPod(t, inst)
		bind(t, pod, "node-a")
		setStatus(t, pod, running("10.244.2.1", true))
		expectReports(t, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

		g.Expect(k8s.Delete(context.Background(), inst)).To(Succeed())
		expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonTerminating)
		t.Log("the Instance waits for its Pod, which waits for the kubelet")
		g.Consistently(func(g Gomega) { getInstance(g, inst) }).WithTimeout(500 * time.Millisecond).Should(Succeed())
		confirmDeletion(t, pod)
		g.Eventually(func() error {
			return k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &computev1alpha.Instance{})
		}).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound))
	})

	t.Run("a Pod never scheduled goes at once, and the Instance with it", func(t *testing.T) {
		g := NewWithT(t)
		inst := makeInstance(ns, "pending-0").create(t)
		waitPod(t, inst)
		g.Expect(k8s.Delete(context.Background(), inst)).To(Succeed())
		g.Eventually(func() error {
			return k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &computev1alpha.Instance{})
		}).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound))
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Pod outlived its Instance: %v", err)
	})
}

func TestARecreatedInstanceReplacesThePodOfTheEarlierOne(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	first := makeInstance(ns, "web-0").create(t)
	old := waitPod(t, first)
	bind(t, old, "node-a")
	setStatus(t, old, running("10.244.3.1", true))
	expectReports(t, first, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

	t.Log("the earlier Instance goes without the provider tearing its Pod down (its finalizer removed by hand), as after a lost finalizer")
	g.Eventually(func(g Gomega) {
		cur := getInstance(g, first)
		controllerutil.RemoveFinalizer(cur, kubernetes.Finalizer)
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(k8s.Delete(context.Background(), first)).To(Succeed())
	g.Eventually(func() error {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(first), &computev1alpha.Instance{})
	}).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound))

	t.Log("the Instance recreated under the same name (a restart) gets a new Pod in place of the earlier one's")
	second := makeInstance(ns, "web-0").create(t)
	g.Expect(second.UID).NotTo(Equal(first.UID))
	confirmDeletion(t, old)
	fresh := waitPod(t, second)
	g.Expect(fresh.UID).NotTo(Equal(old.UID))
	g.Expect(fresh.Spec.NodeName).To(BeEmpty())
	expectReports(t, second, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the scheduler")
}

func TestANewTemplateHashReplacesThePod(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	old := waitPod(t, inst)
	g.Eventually(func(g Gomega) {
		cur := getInstance(g, inst)
		cur.Spec.Controller.TemplateHash = "h2"
		cur.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), cur)).To(Succeed())
		g.Expect(cur.UID).NotTo(Equal(old.UID))
		g.Expect(cur.Annotations).To(HaveKeyWithValue(kubernetes.TemplateHashAnnotation, "h2"))
		g.Expect(cur.Spec.Containers[0].Image).To(Equal("ghcr.io/citycells/hello:2.0"))
	}).WithTimeout(timeout).Should(Succeed())
}

func TestAMissingConfigMapHoldsThePodUntilItIsDelivered(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").with(func(i *computev1alpha.Instance) {
		i.Spec.Volumes = []computev1alpha.InstanceVolume{{Name: "conf", ConfigMap: &computev1alpha.ConfigMapVolumeSource{Name: "app"}}}
		i.Spec.Runtime.Sandbox.Containers[0].VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "conf", MountPath: ptr.To("/etc/app")}}
	}).create(t)

	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, `ConfigMap "configmap.app"`, "namespace "+ns)
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Pod without its ConfigMap: %v", err)

	t.Log("the cell's copy of the project's ConfigMap arrives: the Pod is created, mounting it")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: referenceddata.CompanionName(referenceddata.KindConfigMap, "app")},
		Data: map[string]string{"app.yaml": "mode: prod"}}
	g.Expect(k8s.Create(context.Background(), cm)).To(Succeed())
	pod := waitPod(t, inst)
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	g.Expect(pod.Spec.Volumes[0].ConfigMap).NotTo(BeNil())
	g.Expect(pod.Spec.Volumes[0].ConfigMap.Name).To(Equal("configmap.app"))
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonProvisioning)
}

func TestAPodTheProviderDidNotCreateIsNeverTouched(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	theirs := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "registry.example/other:1"}}},
	}
	g.Expect(k8s.Create(context.Background(), theirs)).To(Succeed())

	t.Log("the provider caches only its own Pods, so it learns of this one when its create fails, and reports it")
	inst := makeInstance(ns, "web-0").create(t)
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError,
		"pod web-0 in namespace "+ns+" was not created by the kubernetes runtime provider", "delete it")
	cur := &corev1.Pod{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(theirs), cur)).To(Succeed())
	g.Expect(cur.UID).To(Equal(theirs.UID))
	g.Expect(cur.DeletionTimestamp).To(BeNil())

	t.Log("once it is gone, the Instance gets its own Pod")
	g.Expect(k8s.Delete(context.Background(), theirs)).To(Succeed())
	pod := waitPod(t, inst)
	g.Expect(pod.Labels).To(HaveKey(kubernetes.InstanceLabel))
}

func TestAPodTheCellForbidsIsReportedAndTriedAgain(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	g.Expect(k8s.Create(context.Background(), quota)).To(Succeed())
	// The quota controller would write the usage; there is none here.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	g.Expect(k8s.Status().Update(context.Background(), quota)).To(Succeed())
	inst := makeInstance(ns, "web-0").create(t)
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the cell's API server forbids the pod", "no-pods")

	g.Expect(k8s.Delete(context.Background(), quota)).To(Succeed())
	waitPod(t, inst)
}

func TestARunningPodOutlivesItsInstanceTypeLeavingTheCatalog(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	// A type of this test's own (the catalog is cluster-scoped, the plane
	// shared), as a cell has it before an upgrade removes or has not yet
	// delivered it.
	it := &computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: "transient-" + ns},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseActive},
		},
	}
	g.Expect(k8s.Create(ctx, it)).To(Succeed())
	onTransient := func(i *computev1alpha.Instance) { i.Spec.Runtime.Resources.InstanceType = it.Name }
	inst := makeInstance(ns, "web-0").with(onTransient).create(t)
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	setStatus(t, pod, running("10.244.1.9", true))
	expectReports(t, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

	t.Log("the type leaves the catalog: the running Pod of the current template stays, at its size")
	g.Expect(k8s.Delete(ctx, it)).To(Succeed())
	nudge := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/nudge":"1"}}}`))
	g.Expect(k8s.Patch(ctx, inst.DeepCopy(), nudge)).To(Succeed()) // a reconcile after the type is gone
	g.Consistently(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).To(BeNil())
		g.Expect(got.UID).To(Equal(pod.UID))
		g.Expect(condition(getInstance(g, inst), computev1alpha.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2 * time.Second).Should(Succeed())

	t.Log("a new Instance of the missing type gets no Pod: it cannot be sized")
	fresh := makeInstance(ns, "web-1").with(onTransient).create(t)
	expectReports(t, fresh, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, it.Name)
	err := k8s.Get(ctx, client.ObjectKeyFromObject(fresh), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Pod for an unsizable Instance: %v", err)
}

func TestAMissingEnvFromSecretHoldsThePodUntilItIsDelivered(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").with(func(i *computev1alpha.Instance) {
		c := &i.Spec.Runtime.Sandbox.Containers[0]
		c.EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "DB_", SecretRef: &computev1alpha.SecretEnvSource{Name: "db"}}}
		c.SecurityContext = &computev1alpha.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &computev1alpha.Capabilities{Drop: []computev1alpha.Capability{"ALL"}}}
	}).create(t)

	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, `Secret "secret.db"`, "namespace "+ns)
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Pod without its Secret: %v", err)

	t.Log("the cell's copy of the project's Secret arrives: the Pod is created, reading it as environment, with the security context")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: referenceddata.CompanionName(referenceddata.KindSecret, "db")},
		StringData: map[string]string{"PASSWORD": "hunter2"}}
	g.Expect(k8s.Create(context.Background(), s)).To(Succeed())
	pod := waitPod(t, inst)
	c := pod.Spec.Containers[0]
	g.Expect(c.EnvFrom).To(HaveLen(1))
	g.Expect(c.EnvFrom[0].Prefix).To(Equal("DB_"))
	g.Expect(c.EnvFrom[0].SecretRef.Name).To(Equal("secret.db"))
	g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
	g.Expect(c.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonProvisioning)
}
