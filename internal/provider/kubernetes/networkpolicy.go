package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/ownerref"
)

// NetworkPolicyEnforcement says whether the cell's network enforces
// Kubernetes NetworkPolicy: the provider writes the policies either way,
// but cannot see whether anything enforces them, so the operator says.
type NetworkPolicyEnforcement string

// Network policy enforcement modes (--network-policy-enforcement).
const (
	// EnforcementNone: nothing in the cell enforces NetworkPolicy (a CNI
	// without policy support, no policy agent). The policies are written
	// all the same, and an Instance that declares a policy reports
	// Programmed False with reason NetworkPolicyNotEnforced. The default.
	EnforcementNone NetworkPolicyEnforcement = "none"
	// EnforcementEnforced: the cell's CNI or policy agent enforces
	// NetworkPolicy; an Instance is Programmed once its Pod is placed and
	// its policy written.
	EnforcementEnforced NetworkPolicyEnforcement = "enforced"
)

// NetworkPolicyEnforcements are the modes, for flags and messages.
var NetworkPolicyEnforcements = []string{string(EnforcementNone), string(EnforcementEnforced)}

// networkPolicyFor returns the NetworkPolicy that fences the ingress of
// inst's Pod, in the Instance's namespace, under its name. It selects the
// one Pod the provider runs for the Instance (InstanceLabel, which the
// provider sets on the Pod over any label of the template) and nothing
// else, whatever the template says: the template gives only ports and
// ipBlock sources, never a selector. Only Ingress is restricted.
//
// The rules are those of the Instance's interfaces' policies: a Pod has
// one network interface, so every policy the Instance declares applies to
// it (the union of their rules, as Kubernetes combines policies). An
// interface policy without rules denies every source. An Instance that
// declares no policy gets the cell's default: ingress from the Pods of
// its own namespace (its project's other Instances) only. Traffic from the
// Pod's own node (the kubelet's probes) is always allowed by Kubernetes'
// NetworkPolicy semantics. It is pure.
func networkPolicyFor(inst *computev1alpha.Instance) *networkingv1.NetworkPolicy {
	ingress, declared := declaredIngress(inst)
	if !declared {
		ingress = []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
		}}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            inst.Name,
			Namespace:       inst.Namespace,
			Labels:          map[string]string{InstanceLabel: labelValue(inst.Name)},
			OwnerReferences: []metav1.OwnerReference{ownerref.Instance(inst)},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{InstanceLabel: labelValue(inst.Name)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// declaresPolicy reports whether any interface of the Instance declares a
// network policy.
func declaresPolicy(inst *computev1alpha.Instance) bool {
	_, declared := declaredIngress(inst)
	return declared
}

// declaredIngress returns the ingress rules of every interface policy of
// the Instance, translated, in order; declared is false when no interface
// has a policy.
func declaredIngress(inst *computev1alpha.Instance) (rules []networkingv1.NetworkPolicyIngressRule, declared bool) {
	for i := range inst.Spec.NetworkInterfaces {
		pol := inst.Spec.NetworkInterfaces[i].NetworkPolicy
		if pol == nil {
			continue
		}
		declared = true
		for j := range pol.Ingress {
			if rule, ok := ingressRule(&pol.Ingress[j]); ok {
				rules = append(rules, rule)
			}
		}
	}
	return rules, declared
}

// ingressRule translates one rule: its ports as they are (the protocol
// TCP when unset, as the API server would default it) and its ipBlock
// sources. A source without an ipBlock (admission refuses one) matches
// nothing: a rule whose sources all lack one allows nothing and is
// dropped (ok false) rather than turned into "every source".
func ingressRule(in *computev1alpha.NetworkPolicyIngressRule) (networkingv1.NetworkPolicyIngressRule, bool) {
	var out networkingv1.NetworkPolicyIngressRule
	for i := range in.Ports {
		p := &in.Ports[i]
		port := networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: copyPtr(p.Port), EndPort: copyPtr(p.EndPort)}
		if p.Protocol != nil {
			port.Protocol = ptr.To(*p.Protocol)
		}
		out.Ports = append(out.Ports, port)
	}
	for _, peer := range in.From {
		if peer.IPBlock == nil {
			continue
		}
		block := &networkingv1.IPBlock{CIDR: peer.IPBlock.CIDR}
		if len(peer.IPBlock.Except) > 0 {
			block.Except = append([]string(nil), peer.IPBlock.Except...)
		}
		out.From = append(out.From, networkingv1.NetworkPolicyPeer{IPBlock: block})
	}
	if len(in.From) > 0 && len(out.From) == 0 {
		return out, false
	}
	return out, true
}

// policyOwnedBy reports whether the NetworkPolicy is the one of this
// Instance, not of an earlier Instance of the same name.
func policyOwnedBy(np *networkingv1.NetworkPolicy, inst *computev1alpha.Instance) bool {
	ref := metav1.GetControllerOf(np)
	return ref != nil && ref.UID == inst.UID
}

// policyUpToDate reports whether the NetworkPolicy observed is the one
// wanted: the Instance's, labelled and specified as networkPolicyFor says.
func policyUpToDate(cur, want *networkingv1.NetworkPolicy) bool {
	ref, wantRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(want)
	return ref != nil && ref.UID == wantRef.UID &&
		cur.Labels[InstanceLabel] == want.Labels[InstanceLabel] &&
		equality.Semantic.DeepEqual(cur.Spec, want.Spec)
}

// programPolicy makes the NetworkPolicy of the Instance what it should
// be: created when missing, updated when it differs (a template's policy
// changed, an earlier Instance of the name left it), untouched when it is
// right. It returns a problem to report, not an error, when a
// NetworkPolicy the provider did not create holds the Instance's name.
func (r *Reconciler) programPolicy(ctx context.Context, inst *computev1alpha.Instance) (string, error) {
	want := networkPolicyFor(inst)
	cur := &networkingv1.NetworkPolicy{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), cur); {
	case apierrors.IsNotFound(err):
		return r.createPolicy(ctx, want)
	case err != nil:
		return "", fmt.Errorf("failed to get the NetworkPolicy of Instance %s: %w", inst.Name, err)
	case policyUpToDate(cur, want):
		return "", nil
	}
	next := cur.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[InstanceLabel] = want.Labels[InstanceLabel]
	next.OwnerReferences = want.OwnerReferences
	next.Spec = want.Spec
	if err := r.Client.Update(ctx, next, client.FieldOwner(FieldOwner)); apierrors.IsInvalid(err) {
		return "the cell's API server refused the instance's network policy: " + apiMessage(err), nil
	} else if err != nil {
		return "", fmt.Errorf("failed to update the NetworkPolicy of Instance %s: %w", inst.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Updated the NetworkPolicy of an Instance", "networkPolicy", klog.KObj(next))
	return "", nil
}

// createPolicy creates a NetworkPolicy; a name held by one the provider
// did not create (its cache holds only those labelled InstanceLabel) is a
// problem to report.
func (r *Reconciler) createPolicy(ctx context.Context, want *networkingv1.NetworkPolicy) (string, error) {
	err := r.Client.Create(ctx, want, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Created the NetworkPolicy of an Instance", "networkPolicy", klog.KObj(want))
		return "", nil
	case apierrors.IsInvalid(err):
		// The same Instance builds the same policy: retrying cannot help.
		return "the cell's API server refused the instance's network policy: " + apiMessage(err), nil
	case !apierrors.IsAlreadyExists(err):
		return "", fmt.Errorf("failed to create NetworkPolicy %s: %w", want.Name, err)
	}
	md := &metav1.PartialObjectMetadata{}
	md.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), md); err != nil {
		return "", fmt.Errorf("failed to get NetworkPolicy %s, which exists: %w", want.Name, err)
	}
	if _, ours := md.Labels[InstanceLabel]; ours {
		// Created by the provider, not in its cache yet: the cache's event
		// brings the Instance back.
		return "", nil
	}
	return fmt.Sprintf("networkpolicy %s in namespace %s was not created by the kubernetes runtime provider (it has no %s label) and holds the instance's name: delete it",
		want.Name, want.Namespace, InstanceLabel), nil
}

// deletePolicy deletes the Instance's NetworkPolicy, if the cache holds
// one of its own (an earlier Instance's is left to that one, or to the
// garbage collector).
func (r *Reconciler) deletePolicy(ctx context.Context, inst *computev1alpha.Instance) error {
	np := &networkingv1.NetworkPolicy{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(inst), np); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get the NetworkPolicy of Instance %s: %w", inst.Name, err)
	case !policyOwnedBy(np, inst):
		return nil
	}
	deleted, err := r.deleteExact(ctx, np, "NetworkPolicy")
	if deleted {
		ctrl.LoggerFrom(ctx).V(1).Info("Deleted the NetworkPolicy of an Instance", "networkPolicy", klog.KObj(np))
	}
	return err
}

// fence programs the Instance's NetworkPolicy before its Pod is created
// (so no Pod of it runs unfenced where policies are enforced) and says on
// Programmed what the policy amounts to in this cell.
func (r *Reconciler) fence(ctx context.Context, inst *computev1alpha.Instance, out outcome) (outcome, error) {
	problem, err := r.programPolicy(ctx, inst)
	if err != nil {
		return out, err
	}
	if problem != "" {
		if out.action == create {
			out = refused(problem)
		} else {
			out.programmed = condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, problem)
		}
		out.requeueAfter = r.RecheckAfter
		return out, nil
	}
	out.programmed = policyProgrammed(inst, out.programmed, r.NetworkPolicyEnforcement)
	return out, nil
}

// policyProgrammed returns Programmed given the policy's enforcement: an
// Instance that is otherwise programmed (its Pod placed) and declares a
// policy the cell does not enforce is Programmed False with reason
// NetworkPolicyNotEnforced. It still runs and may be Available (and
// Ready): the reason only says its declared ingress restrictions do not
// hold. Any other Programmed is kept.
func policyProgrammed(inst *computev1alpha.Instance, programmed metav1.Condition, mode NetworkPolicyEnforcement) metav1.Condition {
	if programmed.Status != metav1.ConditionTrue || !declaresPolicy(inst) || mode == EnforcementEnforced {
		return programmed
	}
	return condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonNetworkPolicyNotEnforced,
		fmt.Sprintf("%s, but this cell does not enforce network policies: the instance's ingress policy is written as NetworkPolicy %s and any source can reach the instance; "+
			"the cell's operator must run a CNI or policy agent that enforces NetworkPolicy and start the provider with --network-policy-enforcement=enforced",
			programmed.Message, inst.Name))
}
