package cell

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	computenames "github.com/citycells/compute/internal/names"
)

// netNamespace creates a namespace on the net-cell plane for one test.
func netNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "net-"}}
	if err := netK8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = netK8s.Delete(context.Background(), ns)
		}
	})
	return ns.Name
}

// netInstances lists the Instances of a net-cell namespace, sorted by name.
func netInstances(g Gomega, ns string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(netK8s.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	slices.SortFunc(list.Items, func(a, b computev1alpha.Instance) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// onNetwork makes a deployment's instances attach to a network.
func onNetwork(b *wdBuilder, network string) *wdBuilder {
	b.wd.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{
		Network: computev1alpha.NetworkReference{Name: network},
	}}
	return b
}

func TestWithNetworkingIntegrationOnInstancesAreBoundAndRecordTheirAddresses(t *testing.T) {
	g := NewWithT(t)
	ns := netNamespace(t)
	wd := onNetwork(makeWD(ns, "web").replicas(2).parallel(), "blue").wd
	g.Expect(netK8s.Create(t.Context(), wd)).To(Succeed())

	t.Log("each Instance is bound, released from the Network gate, runs, and shows the address of its binding")
	var insts []computev1alpha.Instance
	g.Eventually(func(g Gomega) {
		insts = netInstances(g, ns)
		g.Expect(insts).To(HaveLen(2))
		for _, inst := range insts {
			g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty(), inst.Name)
			g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Status).To(Equal(metav1.ConditionTrue), inst.Name)
			g.Expect(inst.Status.NetworkInterfaces).To(HaveLen(1), inst.Name)
			g.Expect(inst.Status.NetworkInterfaces[0].Assignments.NetworkIP).NotTo(BeNil(), inst.Name)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())

	subnet := &networkingv1alpha.Subnet{}
	g.Expect(netK8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "blue-dfw"}, subnet)).To(Succeed())
	g.Expect(subnet.Spec.PrefixLength).To(BeEquivalentTo(netSubnetBits))
	prefix := netip.PrefixFrom(netip.MustParseAddr(subnet.Spec.StartAddress), int(subnet.Spec.PrefixLength))
	g.Expect(netip.MustParsePrefix(netPool).Contains(prefix.Addr())).To(BeTrue(), "the subnet %s is cut from the city's pool %s", prefix, netPool)
	g.Expect(netK8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "blue-dfw"}, &networkingv1alpha.NetworkContext{})).To(Succeed())
	g.Expect(netK8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "blue-dfw"}, &networkingv1alpha.SubnetClaim{})).To(Succeed())

	seen := map[string]bool{}
	for _, inst := range insts {
		ip := *inst.Status.NetworkInterfaces[0].Assignments.NetworkIP
		g.Expect(prefix.Contains(netip.MustParseAddr(ip))).To(BeTrue(), "%s's address %s is in the network's subnet %s", inst.Name, ip, prefix)
		g.Expect(seen).NotTo(HaveKey(ip), "two Instances share %s", ip)
		seen[ip] = true

		b := &networkingv1alpha.NetworkBinding{}
		g.Expect(netK8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: computenames.NetworkBindingName(inst.Name, 0)}, b)).To(Succeed())
		g.Expect(metav1.IsControlledBy(b, &inst)).To(BeTrue(), "the binding of %s is controlled by it", inst.Name)
		g.Expect(b.Spec.Network.Name).To(Equal("blue"))
		g.Expect(b.Spec.Topology).To(HaveKeyWithValue(networkingv1alpha.CityCodeTopologyKey, "DFW"))
		g.Expect(b.Status.Addresses).To(HaveLen(1))
		g.Expect(b.Status.Addresses[0].Address).To(Equal(ip), "the Instance records its binding's address")
		g.Expect(b.Status.NetworkContextRef).To(Equal(&networkingv1alpha.NetworkContextRef{Namespace: ns, Name: "blue-dfw"}))
	}

	t.Log("deleting the deployment deletes the Instances and, with them, their bindings")
	g.Expect(netK8s.Delete(t.Context(), wd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(netInstances(g, ns)).To(BeEmpty())
		list := &networkingv1alpha.NetworkBindingList{}
		g.Expect(netK8s.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), "no binding outlives its Instance")
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

func TestWithNetworkingIntegrationOnAnExhaustedSubnetIsNetworkUnavailable(t *testing.T) {
	g := NewWithT(t)
	ns := netNamespace(t)
	// A /29 holds 5 addresses; the sixth Instance gets none.
	wd := onNetwork(makeWD(ns, "crowd").replicas(6).parallel(), "tiny").wd
	g.Expect(netK8s.Create(t.Context(), wd)).To(Succeed())

	t.Log("five Instances run; the sixth stays gated with Ready=False NetworkUnavailable naming the binding and why")
	g.Eventually(func(g Gomega) {
		insts := netInstances(g, ns)
		g.Expect(insts).To(HaveLen(6))
		var ready, refused []computev1alpha.Instance
		for _, inst := range insts {
			switch c := condition(inst.Status.Conditions, computev1alpha.ConditionReady); {
			case c.Status == metav1.ConditionTrue:
				ready = append(ready, inst)
			case c.Reason == computev1alpha.ReasonNetworkUnavailable:
				refused = append(refused, inst)
			}
		}
		g.Expect(ready).To(HaveLen(5))
		g.Expect(refused).To(HaveLen(1))
		inst := refused[0]
		msg := condition(inst.Status.Conditions, computev1alpha.ConditionReady).Message
		g.Expect(msg).To(ContainSubstring(computenames.NetworkBindingName(inst.Name, 0)))
		g.Expect(msg).To(ContainSubstring(networkingv1alpha.NetworkBindingReasonSubnetExhausted))
		g.Expect(msg).To(ContainSubstring("tiny"))
		g.Expect(msg).To(ContainSubstring("DFW"))
		g.Expect(inst.Spec.Controller.SchedulingGates).To(ContainElement(computev1alpha.SchedulingGate{Name: computev1alpha.NetworkSchedulingGate}))
		g.Expect(inst.Status.NetworkInterfaces).To(BeEmpty())
		g.Expect(meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeNil(), "the provider never ran it")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("scaled to five, every Instance runs (the one scaled away frees its address for the refused one if it was not that one) and one binding per Instance is left")
	g.Eventually(func() error {
		cur := &computev1alpha.WorkloadDeployment{}
		if err := netK8s.Get(t.Context(), client.ObjectKeyFromObject(wd), cur); err != nil {
			return err
		}
		five := int32(5)
		cur.Spec.Replicas = &five
		return netK8s.Update(t.Context(), cur)
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		insts := netInstances(g, ns)
		g.Expect(insts).To(HaveLen(5))
		for _, inst := range insts {
			g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionReady).Status).To(Equal(metav1.ConditionTrue), inst.Name)
		}
		list := &networkingv1alpha.NetworkBindingList{}
		g.Expect(netK8s.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(5), "the binding of the Instance scaled away is gone")
	}).WithTimeout(60 * time.Second).Should(Succeed())
}
