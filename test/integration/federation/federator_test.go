package federation

import (
	"context"
	"strconv"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	fedcontroller "github.com/citycells/compute/internal/controller/federation"
)

func TestAProjectDeploymentIsCopiedToItsHubNamespaceWithItsCitysPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-dfw", "DFW", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())

	t.Log("the hub namespace of the project namespace appears, labelled with where it comes from")
	hubNamespace := &corev1.Namespace{}
	g.Eventually(get(hubClient, "", hubNS, hubNamespace), timeout, interval).Should(Succeed())
	g.Expect(hubNamespace.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamClusterNameLabel, "cluster-"+clusterName))
	g.Expect(hubNamespace.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamNamespaceLabel, ns))

	t.Log("the deployment's city is recorded for the hub's owner policy before its copy is made, with a second deployment's beside it")
	lhr := makeWD(ns, "web-lhr", "LHR", 1)
	g.Expect(projectClient.Create(ctx, lhr)).To(Succeed())
	cities := &corev1.ConfigMap{}
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: fedcontroller.DeploymentCitiesName}, cities)).To(Succeed())
		g.Expect(cities.Data).To(Equal(map[string]string{"web-dfw": "DFW", "web-lhr": "LHR"}))
	}, timeout, interval).Should(Succeed())
	g.Eventually(get(hubClient, hubNS, lhr.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())

	t.Log("it enforces Pod Security baseline (Karmada carries the namespace, labels included, into every cell): " +
		"the API server itself refuses a stronger Pod, whoever writes it, and admits a plain one")
	g.Expect(hubNamespace.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"))
	strong := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: "root"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "ghcr.io/example/app:1.0",
		SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}}}}
	err := hubClient.Create(ctx, strong, client.DryRunAll)
	g.Expect(err).To(HaveOccurred(), "a Pod adding SYS_ADMIN was admitted into a federation namespace")
	g.Expect(err.Error()).To(ContainSubstring(`violates PodSecurity "baseline:latest"`))
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "ghcr.io/example/app:1.0"}}}}
	g.Expect(hubClient.Create(ctx, plain, client.DryRunAll)).To(Succeed())

	t.Log("an operator's stricter level stands; a weaker one is raised")
	setLevel := func(level string) {
		g.Eventually(func() error {
			cur := &corev1.Namespace{}
			if err := hubClient.Get(ctx, client.ObjectKey{Name: hubNS}, cur); err != nil {
				return err
			}
			cur.Labels["pod-security.kubernetes.io/enforce"] = level
			return hubClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
	}
	touch := func() { // a change of the deployment makes the federator pass again
		g.Eventually(func() error {
			cur := &computev1alpha.WorkloadDeployment{}
			if err := projectClient.Get(ctx, client.ObjectKeyFromObject(wd), cur); err != nil {
				return err
			}
			cur.Labels["touched"] = rand.String(5)
			return projectClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
	}
	setLevel("restricted")
	touch()
	g.Consistently(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: hubNS}, hubNamespace)).To(Succeed())
		g.Expect(hubNamespace.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	}, "2s", interval).Should(Succeed())
	setLevel("privileged")
	touch()
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: hubNS}, hubNamespace)).To(Succeed())
		g.Expect(hubNamespace.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"))
	}, timeout, interval).Should(Succeed())

	t.Log("the copy carries the spec and labels, the upstream labels and the city routing label, and no owner")
	copyWD := &computev1alpha.WorkloadDeployment{}
	g.Eventually(get(hubClient, hubNS, wd.Name, copyWD), timeout, interval).Should(Succeed())
	g.Expect(copyWD.Spec).To(Equal(wd.Spec))
	g.Expect(copyWD.Labels).To(And(
		HaveKeyWithValue(computev1alpha.WorkloadNameLabel, "web"),
		HaveKeyWithValue(computev1alpha.UpstreamClusterNameLabel, "cluster-"+clusterName),
		HaveKeyWithValue(computev1alpha.UpstreamNamespaceLabel, ns),
		HaveKeyWithValue(computev1alpha.CityCodeTopologyLabel, "DFW"),
	))
	g.Expect(copyWD.Annotations).To(HaveKeyWithValue(fedcontroller.UpstreamGenerationAnnotation, "1"))
	g.Expect(copyWD.Annotations).To(HaveKeyWithValue(fedcontroller.UpstreamUIDAnnotation, string(wd.UID)))
	g.Expect(copyWD.OwnerReferences).To(BeEmpty())

	t.Log("DFW's policy sends WorkloadDeployments labelled DFW to Clusters labelled DFW, each with every replica")
	policy := &policyv1alpha1.PropagationPolicy{}
	g.Eventually(get(hubClient, hubNS, "city-dfw", policy), timeout, interval).Should(Succeed())
	dfw := map[string]string{computev1alpha.CityCodeTopologyLabel: "DFW"}
	g.Expect(policy.Labels).To(HaveKeyWithValue(computev1alpha.ManagedByLabel, computev1alpha.ManagedByCompute))
	g.Expect(policy.Spec.ResourceSelectors).To(HaveLen(1))
	g.Expect(policy.Spec.ResourceSelectors[0].Kind).To(Equal("WorkloadDeployment"))
	g.Expect(policy.Spec.ResourceSelectors[0].LabelSelector.MatchLabels).To(Equal(dfw))
	g.Expect(policy.Spec.Placement.ClusterAffinity.LabelSelector.MatchLabels).To(Equal(dfw))
	g.Expect(policy.Spec.Placement.ReplicaScheduling.ReplicaSchedulingType).To(Equal(policyv1alpha1.ReplicaSchedulingTypeDuplicated))

	t.Log("the project WorkloadDeployment holds the finalizer, names its hub namespace and reports Federated")
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(wd), cur)).To(Succeed())
		g.Expect(controllerutil.ContainsFinalizer(cur, computev1alpha.FederationFinalizer)).To(BeTrue())
		g.Expect(cur.Annotations).To(HaveKeyWithValue(computev1alpha.FederationNamespaceAnnotation, hubNS))
		fed := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionFederated)
		g.Expect(fed).NotTo(BeNil())
		g.Expect(fed.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(fed.Reason).To(Equal(computev1alpha.ReasonFederated))
	}, timeout, interval).Should(Succeed())
}

func TestAForgedFederationNamespaceRecordIsNeverFollowed(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	victimNS, victimHub := newNamespace(t)
	victim := makeWD(victimNS, "web-dfw", "DFW", 2)
	g.Expect(projectClient.Create(ctx, victim)).To(Succeed())
	victimCopy := &computev1alpha.WorkloadDeployment{}
	g.Eventually(get(hubClient, victimHub, victim.Name, victimCopy), timeout, interval).Should(Succeed())

	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, victim.Name, "DFW", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())

	t.Log("a user records another namespace's federation namespace on a deployment of the same name and scales it")
	before := projectWD(g, wd)
	forged := before.DeepCopy()
	forged.Annotations[computev1alpha.FederationNamespaceAnnotation] = victimHub
	forged.Spec.Replicas = ptr.To[int32](5)
	g.Expect(projectClient.Patch(ctx, forged, client.MergeFrom(before))).To(Succeed())

	t.Log("the change reaches the deployment's own copy, the record is put back, and the other namespace's copy is untouched")
	g.Eventually(func(g Gomega) {
		own := &computev1alpha.WorkloadDeployment{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: wd.Name}, own)).To(Succeed())
		g.Expect(own.Spec.Replicas).To(Equal(ptr.To[int32](5)))
		g.Expect(projectWD(g, wd).Annotations).To(HaveKeyWithValue(computev1alpha.FederationNamespaceAnnotation, hubNS))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: victimHub, Name: victim.Name}, cur)).To(Succeed())
		g.Expect(cur.Spec).To(Equal(victimCopy.Spec))
		g.Expect(cur.Annotations).To(HaveKeyWithValue(fedcontroller.UpstreamUIDAnnotation, string(victim.UID)))
	}, time.Second, interval).Should(Succeed())
}

func TestTheHubsStatusIsMirroredAsSoonAsItChanges(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-lhr", "LHR", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())

	t.Log("Karmada aggregates 2 ready replicas into the copy; the project WorkloadDeployment shows them for its generation")
	reportOnHub(t, hubNS, wd.Name, 2, 2)
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(cur.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionFederated)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Log("the status is not rewritten while nothing changes")
	settled := projectWD(g, wd).ResourceVersion
	g.Consistently(func(g Gomega) string { return projectWD(g, wd).ResourceVersion }, 2*time.Second, interval).Should(Equal(settled))

	t.Log("scaling the project WorkloadDeployment reaches the copy; its generation is reported only once the cells caught up")
	before := projectWD(g, wd)
	scaled := before.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	// A merge patch cannot conflict with the federator's status writes.
	g.Expect(projectClient.Patch(ctx, scaled, client.MergeFrom(before))).To(Succeed())
	copyWD := &computev1alpha.WorkloadDeployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: wd.Name}, copyWD)).To(Succeed())
		g.Expect(copyWD.Spec.Replicas).To(Equal(ptr.To[int32](3)))
		g.Expect(copyWD.Annotations).To(HaveKeyWithValue(fedcontroller.UpstreamGenerationAnnotation, strconv.FormatInt(scaled.Generation, 10)))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) int64 { return projectWD(g, wd).Status.ObservedGeneration }, time.Second, interval).
		Should(Equal(scaled.Generation - 1))

	reportOnHub(t, hubNS, wd.Name, 3, 3)
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(scaled.Generation))
		g.Expect(cur.Status.DesiredReplicas).To(Equal(int32(3)))
	}, timeout, interval).Should(Succeed())
}

func TestACitysPolicyGoesWithItsLastDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	a, b, c := makeWD(ns, "a-dfw", "DFW", 1), makeWD(ns, "b-dfw", "DFW", 1), makeWD(ns, "c-lhr", "LHR", 1)
	for _, wd := range []*computev1alpha.WorkloadDeployment{a, b, c} {
		g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
		g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())
	}
	g.Eventually(func(g Gomega) []string { return policies(g, hubNS) }, timeout, interval).Should(Equal([]string{"city-dfw", "city-lhr"}))

	t.Log("deleting one of two DFW deployments deletes its copy and keeps DFW's policy")
	g.Expect(projectClient.Delete(ctx, a)).To(Succeed())
	g.Eventually(gone(projectClient, ns, a.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(BeTrue())
	g.Expect(gone(hubClient, hubNS, a.Name, &computev1alpha.WorkloadDeployment{})()).To(BeTrue(), "the copy outlived its deployment")
	g.Consistently(func(g Gomega) []string { return policies(g, hubNS) }, time.Second, interval).Should(Equal([]string{"city-dfw", "city-lhr"}))

	t.Log("deleting the last DFW deployment deletes DFW's policy; LHR's stays")
	g.Expect(projectClient.Delete(ctx, b)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return policies(g, hubNS) }, timeout, interval).Should(Equal([]string{"city-lhr"}))

	t.Log("and LHR's goes with LHR's")
	g.Expect(projectClient.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return policies(g, hubNS) }, timeout, interval).Should(BeEmpty())
}

func TestAnUnreachableHubHoldsTheDeletionVisiblyUntilTheCopyIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-sin", "SIN", 1)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(projectWD(g, wd).Status.Conditions, computev1alpha.ConditionFederated)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Log("with the hub down, the deleted WorkloadDeployment stays and says it cannot delete its copy")
	g.Expect(env.StopAPIServer(hubPlane)).To(Succeed())
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = env.StartAPIServer(context.Background(), hubPlane)
		}
	})
	g.Expect(projectClient.Delete(ctx, wd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(cur.DeletionTimestamp).NotTo(BeNil())
		fed := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionFederated)
		g.Expect(fed).NotTo(BeNil())
		g.Expect(fed.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(fed.Reason).To(Equal(computev1alpha.ReasonFederationFailed))
		g.Expect(fed.Message).To(ContainSubstring("cannot delete the copy in the federation plane"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(projectWD(g, wd).Finalizers).To(ContainElement(computev1alpha.FederationFinalizer))
	}, time.Second, interval).Should(Succeed())

	t.Log("once the hub is back, the copy is deleted and so is the WorkloadDeployment")
	g.Expect(env.StartAPIServer(ctx, hubPlane)).To(Succeed())
	restarted = true
	g.Eventually(gone(projectClient, ns, wd.Name, &computev1alpha.WorkloadDeployment{}), time.Minute, interval).Should(BeTrue())
	g.Expect(gone(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{})()).To(BeTrue())
}

// projectWD reads the current project WorkloadDeployment.
func projectWD(g Gomega, wd *computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	cur := &computev1alpha.WorkloadDeployment{}
	g.Expect(projectClient.Get(context.Background(), client.ObjectKeyFromObject(wd), cur)).To(Succeed())
	return cur
}

// reportOnHub writes the status Karmada would aggregate into a hub copy:
// every member caught up, desired replicas, ready of them ready.
func reportOnHub(t *testing.T, namespace, name string, desired, ready int32) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := hubClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cur); err != nil {
			return err
		}
		cur.Status.ObservedGeneration = cur.Generation
		cur.Status.ReplicaCounts = computev1alpha.ReplicaCounts{
			Replicas: desired, CurrentReplicas: ready, UpdatedReplicas: desired, ReadyReplicas: ready, DesiredReplicas: desired,
		}
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{
			Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasAvailable,
			Message: "ready", ObservedGeneration: cur.Generation,
		})
		return hubClient.Status().Update(context.Background(), cur)
	}, timeout, interval).Should(Succeed())
}

// policies lists the PropagationPolicies of a hub namespace by name.
func policies(g Gomega, namespace string) []string {
	list := &policyv1alpha1.PropagationPolicyList{}
	g.Expect(hubClient.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	out := []string{}
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out
}
