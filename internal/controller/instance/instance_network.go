package instance

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/ownerref"
	"github.com/citycells/compute/internal/phases"
	"github.com/citycells/compute/internal/status"
)

// NetworkFieldOwner is the server-side apply field manager of the
// addresses this controller records in status.networkInterfaces
// (NetworkingIntegration on). It is not FieldOwner, so the condition
// writes and the address writes never drop each other's fields.
const NetworkFieldOwner = "compute-instance-network"

// DefaultNetwork is the network an Instance without interfaces is bound to:
// the platform's default network, in the Instance's namespace.
const DefaultNetwork = "default"

// +kubebuilder:rbac:groups=networking.datumapis.com,resources=networkbindings,verbs=get;list;watch;create;delete

// networkState is what an Instance's NetworkBindings say.
type networkState struct {
	// ready is true when every binding is Ready and holds an address.
	ready bool
	// interfaces are the addresses of every interface, in interface order,
	// when ready.
	interfaces []computev1alpha.InstanceNetworkInterfaceStatus
	// refused, when set, is why the networking service refused a binding:
	// Ready's message for reason NetworkUnavailable.
	refused string
}

// wantedBindings returns the NetworkBindings an Instance needs: one per
// network interface (one for DefaultNetwork when it lists none), in its
// namespace, in its city, controlled by the Instance so the garbage
// collector deletes them with it.
func wantedBindings(inst *computev1alpha.Instance) []*networkingv1alpha.NetworkBinding {
	refs := make([]networkingv1alpha.NetworkRef, 0, max(len(inst.Spec.NetworkInterfaces), 1))
	for _, ni := range inst.Spec.NetworkInterfaces {
		refs = append(refs, networkingv1alpha.NetworkRef{Namespace: ni.Network.Namespace, Name: ni.Network.Name})
	}
	if len(refs) == 0 {
		refs = append(refs, networkingv1alpha.NetworkRef{Name: DefaultNetwork})
	}
	out := make([]*networkingv1alpha.NetworkBinding, len(refs))
	for i, ref := range refs {
		out[i] = &networkingv1alpha.NetworkBinding{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       inst.Namespace,
				Name:            names.NetworkBindingName(inst.Name, i),
				Labels:          map[string]string{computev1alpha.ManagedByLabel: computev1alpha.ManagedByCompute},
				OwnerReferences: []metav1.OwnerReference{ownerref.Instance(inst)},
			},
			Spec: networkingv1alpha.NetworkBindingSpec{
				Network:  ref,
				Topology: map[string]string{networkingv1alpha.CityCodeTopologyKey: cityOf(inst)},
			},
		}
	}
	return out
}

// cityOf returns the city an Instance runs in, from its city label.
func cityOf(inst *computev1alpha.Instance) string {
	return inst.Labels[computev1alpha.CityCodeLabel]
}

// bindNetworks (NetworkingIntegration on) makes sure every interface of
// the Instance has its NetworkBinding, reads what the networking service
// says about them, and records the assigned addresses in
// status.networkInterfaces once every binding is Ready. The Network gate is
// released later (releaseGate), after Ready is written.
func (r *Reconciler) bindNetworks(ctx context.Context, s *scope) (phases.Result, error) {
	if !r.NetworkingIntegration {
		return phases.Result{}, nil
	}
	if cityOf(s.inst) == "" {
		s.network = networkState{refused: fmt.Sprintf("the instance has no %s label, so no network can be bound for it in a city", computev1alpha.CityCodeLabel)}
		return phases.Result{}, nil
	}
	state := networkState{ready: true}
	for i, want := range wantedBindings(s.inst) {
		have := &networkingv1alpha.NetworkBinding{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
		switch {
		case apierrors.IsNotFound(err):
			if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return phases.Result{}, fmt.Errorf("failed to create NetworkBinding %s of Instance %s: %w", want.Name, s.inst.Name, err)
			}
			state.ready = false
			continue
		case err != nil:
			return phases.Result{}, fmt.Errorf("failed to get NetworkBinding %s of Instance %s: %w", want.Name, s.inst.Name, err)
		}
		if !metav1.IsControlledBy(have, s.inst) {
			// Left by an earlier Instance of this name: the garbage
			// collector removes it, and its deletion brings this
			// Instance back to create its own.
			state.ready = false
			continue
		}
		ready := meta.FindStatusCondition(have.Status.Conditions, networkingv1alpha.NetworkBindingConditionReady)
		switch {
		case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason != networkingv1alpha.NetworkBindingReasonPending:
			state.ready = false
			if state.refused == "" {
				state.refused = fmt.Sprintf("the networking service refused NetworkBinding %s for network %s in %s (interface %d): %s: %s",
					have.Name, networkName(have), cityOf(s.inst), i, ready.Reason, ready.Message)
			}
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != have.Generation || len(have.Status.Addresses) == 0:
			state.ready = false
		default:
			state.interfaces = append(state.interfaces, computev1alpha.InstanceNetworkInterfaceStatus{
				Assignments: computev1alpha.InstanceNetworkInterfaceAssignments{NetworkIP: ptr.To(have.Status.Addresses[0].Address)},
			})
		}
	}
	if !state.ready {
		state.interfaces = nil
	}
	s.network = state
	if !state.ready || equality.Semantic.DeepEqual(s.inst.Status.NetworkInterfaces, state.interfaces) {
		return phases.Result{}, nil
	}
	return phases.Result{}, r.applyAddresses(ctx, s.inst, state.interfaces)
}

// networkName renders a binding's network as [namespace/]name.
func networkName(b *networkingv1alpha.NetworkBinding) string {
	if b.Spec.Network.Namespace == "" {
		return b.Spec.Network.Name
	}
	return b.Spec.Network.Namespace + "/" + b.Spec.Network.Name
}

// applyAddresses writes status.networkInterfaces with server-side apply
// under NetworkFieldOwner. inst is updated from the response.
func (r *Reconciler) applyAddresses(ctx context.Context, inst *computev1alpha.Instance, ifaces []computev1alpha.InstanceNetworkInterfaceStatus) error {
	items := make([]any, 0, len(ifaces))
	for i := range ifaces {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ifaces[i])
		if err != nil {
			return fmt.Errorf("failed to encode the addresses of Instance %s: %w", inst.Name, err)
		}
		items = append(items, u)
	}
	_, err := r.applyStatusPart(ctx, inst, NetworkFieldOwner, map[string]any{"networkInterfaces": items}, "record the network addresses")
	return err
}

// applyStatusPart writes status, the fields of an Instance's status that
// fieldOwner owns, with server-side apply; inst is updated from the
// response and the write recorded in own. It reports whether the write
// was made: an Instance gone is not written, and no error; what says in
// an error what the write was for.
func (r *Reconciler) applyStatusPart(ctx context.Context, inst *computev1alpha.Instance, fieldOwner string, status map[string]any, what string) (bool, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": computev1alpha.GroupVersion.String(),
		"kind":       computev1alpha.InstanceKind,
		"metadata":   map[string]any{"name": inst.Name, "namespace": inst.Namespace, "uid": string(inst.UID)},
		"status":     status,
	}}
	err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to %s of Instance %s: %w", what, inst.Name, err)
	}
	fresh := &computev1alpha.Instance{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, fresh); err != nil {
		return false, fmt.Errorf("failed to decode Instance %s: %w", inst.Name, err)
	}
	r.own.Wrote(client.ObjectKeyFromObject(inst), inst.UID, fresh.ResourceVersion)
	*inst = *fresh
	return true, nil
}

// withNetwork turns the Ready of a gated Instance whose binding the
// networking service refused into NetworkUnavailable, the refusal being
// what the user must look at first.
func withNetwork(ready metav1.Condition, net networkState) metav1.Condition {
	if net.refused == "" || ready.Status == metav1.ConditionTrue {
		return ready
	}
	switch ready.Reason {
	case computev1alpha.ReasonPendingNetwork, computev1alpha.ReasonPendingQuota:
		ready.Reason, ready.Message = computev1alpha.ReasonNetworkUnavailable, status.Truncate(strings.TrimSpace(net.refused))
	}
	return ready
}
