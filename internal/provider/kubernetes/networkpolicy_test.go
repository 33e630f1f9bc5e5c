package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// withPolicy gives the Instance one interface per policy (eth0, eth1 …),
// each with that policy; a nil policy leaves its interface without one.
func (b *instBuilder) withPolicy(pols ...*computev1alpha.InstanceNetworkInterfaceNetworkPolicy) *instBuilder {
	for i, p := range pols {
		b.i.Spec.NetworkInterfaces = append(b.i.Spec.NetworkInterfaces, computev1alpha.InstanceNetworkInterface{
			Name: "eth" + string(rune('0'+i)), Network: computev1alpha.NetworkReference{Name: "default"}, NetworkPolicy: p,
		})
	}
	return b
}

// rules is an interface policy of the given ingress rules.
func rules(rs ...computev1alpha.NetworkPolicyIngressRule) *computev1alpha.InstanceNetworkInterfaceNetworkPolicy {
	return &computev1alpha.InstanceNetworkInterfaceNetworkPolicy{Ingress: rs}
}

func tcp(port int) computev1alpha.NetworkPolicyPort {
	return computev1alpha.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(int32(port)))}
}

func block(cidr string, except ...string) computev1alpha.NetworkPolicyPeer {
	return computev1alpha.NetworkPolicyPeer{IPBlock: &computev1alpha.IPBlock{CIDR: cidr, Except: except}}
}

func wantPort(proto corev1.Protocol, port *intstr.IntOrString, end *int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: port, EndPort: end}
}

func wantBlock(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

func TestNetworkPolicyForTranslatesTheTemplatesPolicy(t *testing.T) {
	sameNamespace := []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}
	tests := map[string]struct {
		inst *computev1alpha.Instance
		want []networkingv1.NetworkPolicyIngressRule
	}{
		"an instance without a policy admits its own namespace's pods only": {
			inst: makeInst().build(), want: sameNamespace,
		},
		"interfaces without a policy are the default too": {
			inst: makeInst().withPolicy(nil, nil).build(), want: sameNamespace,
		},
		"a policy without rules denies every source": {
			inst: makeInst().withPolicy(rules()).build(), want: nil,
		},
		"a rule of ports only admits every source on those ports, TCP unless it says": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{
				tcp(8080),
				{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
				{Protocol: ptr.To(corev1.ProtocolSCTP)},
			}})).build(),
			want: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
				wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(8080)), nil),
				wantPort(corev1.ProtocolUDP, ptr.To(intstr.FromInt32(53)), nil),
				wantPort(corev1.ProtocolSCTP, nil, nil),
			}}},
		},
		"a port range and a named port are kept as they are": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{
				{Port: ptr.To(intstr.FromInt32(30000)), EndPort: ptr.To[int32](30100)},
				{Port: ptr.To(intstr.FromString("http"))},
			}})).build(),
			want: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
				wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(30000)), ptr.To[int32](30100)),
				wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromString("http")), nil),
			}}},
		},
		"ip blocks keep their exceptions, IPv4 and IPv6": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{tcp(443)},
				From:  []computev1alpha.NetworkPolicyPeer{block("10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16"), block("2001:db8::/32")},
			})).build(),
			want: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(443)), nil)},
				From:  []networkingv1.NetworkPolicyPeer{wantBlock("10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16"), wantBlock("2001:db8::/32")},
			}},
		},
		"several rules stay several rules, in order": {
			inst: makeInst().withPolicy(rules(
				computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{tcp(80)}},
				computev1alpha.NetworkPolicyIngressRule{From: []computev1alpha.NetworkPolicyPeer{block("192.0.2.0/24")}},
				computev1alpha.NetworkPolicyIngressRule{},
			)).build(),
			want: []networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(80)), nil)}},
				{From: []networkingv1.NetworkPolicyPeer{wantBlock("192.0.2.0/24")}},
				{},
			},
		},
		"the policies of several interfaces add up, as Kubernetes adds policies up": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{tcp(80)}}), nil,
				rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{tcp(9090)}})).build(),
			want: []networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(80)), nil)}},
				{Ports: []networkingv1.NetworkPolicyPort{wantPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(9090)), nil)}},
			},
		},
		"a rule whose sources all lack an ip block allows nothing, never every source": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{
				Ports: []computev1alpha.NetworkPolicyPort{tcp(22)}, From: []computev1alpha.NetworkPolicyPeer{{}},
			})).build(),
			want: nil,
		},
		"a source without an ip block is left out of the others": {
			inst: makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{
				From: []computev1alpha.NetworkPolicyPeer{{}, block("198.51.100.0/24")},
			})).build(),
			want: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{wantBlock("198.51.100.0/24")}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			np := networkPolicyFor(tc.inst)
			if diff := cmp.Diff(tc.want, np.Spec.Ingress); diff != "" {
				t.Errorf("ingress mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("policy types mismatch (-want +got):\n%s", diff)
			}
			checkFencesOnlyItsPod(t, tc.inst, np)
		})
	}
}

// checkFencesOnlyItsPod fails unless the NetworkPolicy is the Instance's
// own, in its namespace, selecting by InstanceLabel the Pod the provider
// builds for it, and nothing else — no selector of the template's
// labels, no other namespace as a source.
func checkFencesOnlyItsPod(t *testing.T, inst *computev1alpha.Instance, np *networkingv1.NetworkPolicy) {
	t.Helper()
	if np.Name != inst.Name || np.Namespace != inst.Namespace || !policyOwnedBy(np, inst) {
		t.Fatalf("the policy %s/%s is not the Instance's", np.Namespace, np.Name)
	}
	want := metav1.LabelSelector{MatchLabels: map[string]string{InstanceLabel: labelValue(inst.Name)}}
	if diff := cmp.Diff(want, np.Spec.PodSelector); diff != "" {
		t.Fatalf("the policy selects other Pods than the Instance's (-want +got):\n%s", diff)
	}
	if pod, err := podFor(inst, 1); err == nil && pod.Labels[InstanceLabel] != want.MatchLabels[InstanceLabel] {
		t.Fatalf("the policy selects %s=%s, the Instance's Pod is %s=%s",
			InstanceLabel, want.MatchLabels[InstanceLabel], InstanceLabel, pod.Labels[InstanceLabel])
	}
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.NamespaceSelector != nil || peer.PodSelector != nil && (declaresPolicy(inst) || len(peer.PodSelector.MatchLabels)+len(peer.PodSelector.MatchExpressions) > 0) {
				t.Fatalf("a source reaches beyond the template's ip blocks and the Instance's own namespace: %+v", peer)
			}
		}
	}
}

func TestATemplateCannotMakeItsPolicySelectAnotherPod(t *testing.T) {
	// The attacker's template labels its Instance as the victim's, and
	// asks for every source, hoping its policy, or the victim's, fences
	// (or opens) the wrong Pod.
	attacker := makeInst().with(func(i *computev1alpha.Instance) {
		i.Name = "attacker-0"
		i.Labels[InstanceLabel] = "web-0"
		i.Labels["app"] = "victim"
	}).withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{From: []computev1alpha.NetworkPolicyPeer{block("0.0.0.0/0")}})).build()
	victim := makeInst().build()

	np := networkPolicyFor(attacker)
	checkFencesOnlyItsPod(t, attacker, np)
	if got := np.Spec.PodSelector.MatchLabels[InstanceLabel]; got != "attacker-0" {
		t.Errorf("the attacker's policy selects %s=%s, want its own Pod (attacker-0)", InstanceLabel, got)
	}
	victimPod, err := podFor(victim, 1)
	if err != nil {
		t.Fatal(err)
	}
	if selects(np, victimPod) {
		t.Errorf("the attacker's policy selects the victim's Pod %s (labels %v)", victimPod.Name, victimPod.Labels)
	}
	attackerPod, err := podFor(attacker, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !selects(np, attackerPod) {
		t.Errorf("the attacker's policy does not select its own Pod (labels %v)", attackerPod.Labels)
	}
	if selects(networkPolicyFor(victim), attackerPod) {
		t.Errorf("the victim's policy selects the attacker's Pod (labels %v)", attackerPod.Labels)
	}
}

// selects reports whether the policy's Pod selector (match labels only,
// all the provider writes) selects the Pod of the same namespace.
func selects(np *networkingv1.NetworkPolicy, pod *corev1.Pod) bool {
	if np.Namespace != pod.Namespace || len(np.Spec.PodSelector.MatchExpressions) > 0 {
		return false
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			return false
		}
	}
	return true
}

func TestPolicyProgrammedSaysWhenTheCellDoesNotEnforce(t *testing.T) {
	placed := condition(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, ReasonProgrammed, "the pod is scheduled to node n1")
	pending := condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, ReasonUnschedulable, "the pod cannot be scheduled")
	withPolicy := makeInst().withPolicy(rules()).build()
	tests := map[string]struct {
		inst       *computev1alpha.Instance
		programmed metav1.Condition
		mode       NetworkPolicyEnforcement
		want       metav1.Condition
	}{
		"a policy in an enforcing cell is programmed with the pod": {
			inst: withPolicy, programmed: placed, mode: EnforcementEnforced, want: placed,
		},
		"an instance without a policy is programmed in any cell": {
			inst: makeInst().build(), programmed: placed, mode: EnforcementNone, want: placed,
		},
		"a pod not placed yet says so, enforced or not": {
			inst: withPolicy, programmed: pending, mode: EnforcementNone, want: pending,
		},
		"a policy in a cell that does not enforce it is not programmed, and says what to do": {
			inst: withPolicy, programmed: placed, mode: EnforcementNone,
			want: condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonNetworkPolicyNotEnforced,
				"the pod is scheduled to node n1, but this cell does not enforce network policies: the instance's ingress policy is written as NetworkPolicy web-0 "+
					"and any source can reach the instance; the cell's operator must run a CNI or policy agent that enforces NetworkPolicy "+
					"and start the provider with --network-policy-enforcement=enforced"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, policyProgrammed(tc.inst, tc.programmed, tc.mode)); diff != "" {
				t.Errorf("Programmed mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyUpToDate(t *testing.T) {
	inst := makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{tcp(80)}})).build()
	want := networkPolicyFor(inst)
	tests := map[string]struct {
		change func(*networkingv1.NetworkPolicy)
		want   bool
	}{
		"the same policy, as the API server returns it": {change: func(np *networkingv1.NetworkPolicy) {
			np.ResourceVersion, np.UID, np.Generation = "7", "np-uid", 1
			np.Labels["someone"] = "else"
		}, want: true},
		"another port": {change: func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].Ports[0].Port = ptr.To(intstr.FromInt32(81))
		}},
		"an earlier Instance's": {change: func(np *networkingv1.NetworkPolicy) { np.OwnerReferences[0].UID = "uid-0" }},
		"no owner":              {change: func(np *networkingv1.NetworkPolicy) { np.OwnerReferences = nil }},
		"a widened selector":    {change: func(np *networkingv1.NetworkPolicy) { np.Spec.PodSelector = metav1.LabelSelector{} }},
		"egress restricted too": {change: func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cur := want.DeepCopy()
			tc.change(cur)
			if got := policyUpToDate(cur, want); got != tc.want {
				t.Errorf("policyUpToDate = %t, want %t", got, tc.want)
			}
		})
	}
}

// FuzzNetworkPolicyFor checks, for any Instance however malformed, that
// its policy never panics and only ever fences its own Pod: its name and
// namespace, selected by InstanceLabel, sources only the template's ip
// blocks (or, with no policy, the Instance's own namespace).
func FuzzNetworkPolicyFor(f *testing.F) {
	for _, s := range seedInstances(f) {
		f.Add(s)
	}
	for _, inst := range []*computev1alpha.Instance{
		makeInst().withPolicy(rules(computev1alpha.NetworkPolicyIngressRule{Ports: []computev1alpha.NetworkPolicyPort{tcp(80), {}},
			From: []computev1alpha.NetworkPolicyPeer{block("10.0.0.0/8", "10.1.0.0/16"), {}}}), nil, rules()).build(),
		makeInst().with(func(i *computev1alpha.Instance) { i.Name = strings.Repeat("a", 100); i.Labels[InstanceLabel] = "web-0" }).build(),
	} {
		b, err := json.Marshal(inst)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"spec":{"networkInterfaces":[{"networkPolicy":{"ingress":[{"from":[{}]},{"ports":[{"port":"x","endPort":3}]}]}},{}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inst := &computev1alpha.Instance{}
		if err := json.Unmarshal(data, inst); err != nil {
			return
		}
		np := networkPolicyFor(inst)
		checkFencesOnlyItsPod(t, inst, np)
		everySource := 0
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				everySource++
			}
			for _, port := range rule.Ports {
				if port.Protocol == nil {
					t.Fatalf("a port without a protocol: the API server would default it, and the provider rewrite it: %+v", port)
				}
			}
		}
		if declaresPolicy(inst) && everySource > rulesOfEverySource(inst) {
			t.Fatalf("%d rules admit every source, the template has %d: a rule with sources lost them", everySource, rulesOfEverySource(inst))
		}
	})
}

// rulesOfEverySource counts the rules of the Instance's policies that name
// no source.
func rulesOfEverySource(inst *computev1alpha.Instance) int {
	n := 0
	for _, nic := range inst.Spec.NetworkInterfaces {
		if nic.NetworkPolicy == nil {
			continue
		}
		for _, r := range nic.NetworkPolicy.Ingress {
			if len(r.From) == 0 {
				n++
			}
		}
	}
	return n
}
