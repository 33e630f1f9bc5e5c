package kubeprovider

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/provider/kubernetes"
)

// withIngress gives the Instance one interface, eth0, whose policy has
// these rules.
func withIngress(rules ...computev1alpha.NetworkPolicyIngressRule) func(*computev1alpha.Instance) {
	return func(i *computev1alpha.Instance) {
		i.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{
			Name: "eth0", Network: computev1alpha.NetworkReference{Name: "default"},
			NetworkPolicy: &computev1alpha.InstanceNetworkInterfaceNetworkPolicy{Ingress: rules},
		}}
	}
}

// httpFromOffice admits TCP 8080 and the range 9000-9100 from 10.0.0.0/8
// but 10.1.0.0/16, and UDP 53 from 2001:db8::/32.
var httpFromOffice = []computev1alpha.NetworkPolicyIngressRule{
	{
		Ports: []computev1alpha.NetworkPolicyPort{
			{Port: ptr.To(intstr.FromInt32(8080))},
			{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](9100)},
		},
		From: []computev1alpha.NetworkPolicyPeer{{IPBlock: &computev1alpha.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
	},
	{
		Ports: []computev1alpha.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}},
		From:  []computev1alpha.NetworkPolicyPeer{{IPBlock: &computev1alpha.IPBlock{CIDR: "2001:db8::/32"}}},
	},
}

// waitPolicy waits until the Instance's NetworkPolicy in c is owned by it
// and passes check, and returns it.
func waitPolicy(t *testing.T, c client.Client, inst *computev1alpha.Instance, check func(Gomega, *networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(inst), np)).To(Succeed())
		g.Expect(metav1.GetControllerOf(np)).NotTo(BeNil())
		g.Expect(metav1.GetControllerOf(np).UID).To(Equal(inst.UID))
		check(g, np)
	}).WithTimeout(timeout).Should(Succeed())
	return np
}

// expectProgrammed waits until the Instance in c reports Programmed with
// status st and reason, its message holding every word of says.
func expectProgrammed(t *testing.T, c client.Client, inst *computev1alpha.Instance, st metav1.ConditionStatus, reason string, says ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &computev1alpha.Instance{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(inst), cur)).To(Succeed())
		p := condition(cur, computev1alpha.ConditionProgrammed)
		g.Expect(p.Status).To(Equal(st), "Programmed: %+v", p)
		g.Expect(p.Reason).To(Equal(reason), "Programmed: %+v", p)
		for _, s := range says {
			g.Expect(p.Message).To(ContainSubstring(s))
		}
	}).WithTimeout(timeout).Should(Succeed())
}

// selected lists the Pods of the policy's namespace its Pod selector
// selects.
func selected(t *testing.T, c client.Client, np *networkingv1.NetworkPolicy) []string {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatalf("the policy's selector does not parse: %v", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(np.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

func TestAnInstancesPolicyIsANetworkPolicyOfItsPodKeptInStepAndDeletedWithIt(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").with(withIngress(httpFromOffice...)).create(t)

	t.Log("the NetworkPolicy is the template's, translated exactly: its Pod only, Ingress only, the ports and blocks as written")
	np := waitPolicy(t, k8s, inst, func(Gomega, *networkingv1.NetworkPolicy) {})
	g.Expect(np.Labels).To(HaveKeyWithValue(kubernetes.InstanceLabel, "web-0"))
	g.Expect(np.Spec).To(Equal(networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{kubernetes.InstanceLabel: "web-0"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{
				Ports: []networkingv1.NetworkPolicyPort{
					{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8080))},
					{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](9100)},
				},
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
			},
			{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}},
				From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "2001:db8::/32"}}},
			},
		},
	}))
	pod := waitPod(t, inst)
	g.Expect(selected(t, k8s, np)).To(Equal([]string{pod.Name}))

	t.Log("this cell does not enforce policies: once placed the Instance says so on Programmed, and still becomes Available and Ready")
	bind(t, pod, "node-a")
	expectProgrammed(t, k8s, inst, metav1.ConditionFalse, computev1alpha.ReasonNetworkPolicyNotEnforced,
		"the pod is scheduled to node node-a", "does not enforce network policies", "NetworkPolicy web-0", "--network-policy-enforcement=enforced")
	setStatus(t, pod, running("10.244.1.9", true))
	expectReports(t, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getInstance(g, inst), computev1alpha.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())

	t.Log("the template's policy changes: the NetworkPolicy follows, the Pod stays")
	g.Eventually(func(g Gomega) {
		cur := getInstance(g, inst)
		cur.Spec.NetworkInterfaces[0].NetworkPolicy.Ingress = []computev1alpha.NetworkPolicyIngressRule{
			{Ports: []computev1alpha.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("http"))}}},
		}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	np = waitPolicy(t, k8s, inst, func(g Gomega, np *networkingv1.NetworkPolicy) {
		g.Expect(np.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
			{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromString("http"))},
		}}}))
	})

	t.Log("a reconcile that finds the policy as it should be writes nothing")
	setStatus(t, pod, running("10.244.1.9", false))
	expectReports(t, inst, metav1.ConditionFalse, computev1alpha.ReasonNotAvailable)
	again := &networkingv1.NetworkPolicy{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(np), again)).To(Succeed())
	g.Expect(again.ResourceVersion).To(Equal(np.ResourceVersion), "the provider rewrote an unchanged NetworkPolicy")

	t.Log("a policy someone widens is put back")
	g.Eventually(func(g Gomega) {
		cur := &networkingv1.NetworkPolicy{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(np), cur)).To(Succeed())
		cur.Spec.PodSelector = metav1.LabelSelector{}
		cur.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		g.Expect(k8s.Update(context.Background(), cur)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	waitPolicy(t, k8s, inst, func(g Gomega, cur *networkingv1.NetworkPolicy) {
		g.Expect(cur.Spec).To(Equal(np.Spec))
	})

	t.Log("deleting the Instance deletes its Pod, then its NetworkPolicy, then lets the Instance go")
	g.Expect(k8s.Delete(context.Background(), inst)).To(Succeed())
	confirmDeletion(t, pod)
	g.Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &networkingv1.NetworkPolicy{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the NetworkPolicy is still there: %v", err)
		err = k8s.Get(context.Background(), client.ObjectKeyFromObject(inst), &computev1alpha.Instance{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Instance is still there: %v", err)
	}).WithTimeout(timeout).Should(Succeed())
}

func TestAnInstanceWithoutAPolicyAdmitsItsOwnNamespaceOnlyAndIsProgrammed(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	inst := makeInstance(ns, "web-0").create(t)
	np := waitPolicy(t, k8s, inst, func(Gomega, *networkingv1.NetworkPolicy) {})
	g.Expect(np.Spec).To(Equal(networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{kubernetes.InstanceLabel: "web-0"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
	}))
	pod := waitPod(t, inst)
	bind(t, pod, "node-a")
	t.Log("it declares no restriction, so nothing it declares fails open: Programmed as ever")
	expectProgrammed(t, k8s, inst, metav1.ConditionTrue, kubernetes.ReasonProgrammed, "the pod is scheduled to node node-a")
}

func TestATemplateCannotPointItsNetworkPolicyAtAnotherInstancesPod(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	victim := makeInstance(ns, "victim-0").with(withIngress()).create(t)
	t.Log("the attacker labels its Instance as the victim and opens every port to every source")
	attacker := makeInstance(ns, "attacker-0").with(func(i *computev1alpha.Instance) {
		i.Labels[kubernetes.InstanceLabel] = "victim-0"
		i.Labels["app"] = "victim-0"
	}).with(withIngress(computev1alpha.NetworkPolicyIngressRule{})).create(t)

	victimPod, attackerPod := waitPod(t, victim), waitPod(t, attacker)
	g.Expect(attackerPod.Labels).To(HaveKeyWithValue(kubernetes.InstanceLabel, "attacker-0"))
	attackers := waitPolicy(t, k8s, attacker, func(Gomega, *networkingv1.NetworkPolicy) {})
	victims := waitPolicy(t, k8s, victim, func(Gomega, *networkingv1.NetworkPolicy) {})
	t.Log("each policy selects its own Pod and no other: the victim stays denied, the attacker's opening is its own")
	g.Expect(selected(t, k8s, attackers)).To(Equal([]string{attackerPod.Name}))
	g.Expect(selected(t, k8s, victims)).To(Equal([]string{victimPod.Name}))
	g.Expect(victims.Spec.Ingress).To(BeEmpty())
	for _, rule := range attackers.Spec.Ingress {
		for _, peer := range rule.From {
			g.Expect(peer.NamespaceSelector).To(BeNil(), "a source in other namespaces")
			g.Expect(peer.PodSelector).To(BeNil(), "a source by Pod labels")
		}
	}
}

func TestInACellThatEnforcesPoliciesAnInstanceIsProgrammedOnceItsPolicyIsWritten(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-provider-"}}
	g.Expect(enforcing.Create(ctx, ns)).To(Succeed())
	inst := makeInstance(ns.Name, "web-0").with(withIngress(httpFromOffice...)).i
	g.Expect(enforcing.Create(ctx, inst)).To(Succeed())

	np := waitPolicy(t, enforcing, inst, func(Gomega, *networkingv1.NetworkPolicy) {})
	g.Expect(np.Spec.Ingress).To(HaveLen(2))
	pod := &corev1.Pod{}
	g.Eventually(func(g Gomega) {
		g.Expect(enforcing.Get(ctx, client.ObjectKeyFromObject(inst), pod)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	t.Log("the policy was there before the Pod: no Pod of the Instance ran unfenced")
	g.Expect(np.CreationTimestamp.Time).NotTo(BeTemporally(">", pod.CreationTimestamp.Time))
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	g.Expect(enforcing.SubResource("binding").Create(ctx, pod, binding)).To(Succeed())
	expectProgrammed(t, enforcing, inst, metav1.ConditionTrue, kubernetes.ReasonProgrammed, "the pod is scheduled to node node-a")
}
