// Package instancewrite holds the writes every runtime provider makes on an
// Instance, so each provider decides only what to report: its conditions,
// the template hash it observed and its addresses, applied to status with
// server-side apply under the provider's own field manager (compute's
// conditions are never sent, so never touched), only when they differ from
// what the Instance reports; and its finalizer, added and removed with
// server-side apply (finalizers are a set whose entries each manager owns,
// so this never conflicts with other writers and never drops their
// finalizers). The Writer remembers its own writes, so the provider can
// skip the events they cause (ownwrites).
package instancewrite

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/status"
)

// Status is everything a provider owns in an Instance's status.
type Status struct {
	// Conditions are the provider's conditions (Programmed, Available).
	Conditions []metav1.Condition
	// Hash is status.controller.observedTemplateHash.
	Hash string
	// Interfaces are the addresses of the network interfaces.
	Interfaces []computev1alpha.InstanceNetworkInterfaceStatus
}

// Current returns what the provider last wrote: its hash and addresses
// (conditions are the caller's to choose).
func Current(inst *computev1alpha.Instance) Status {
	s := Status{Interfaces: inst.Status.NetworkInterfaces}
	if inst.Status.Controller != nil {
		s.Hash = inst.Status.Controller.ObservedTemplateHash
	}
	return s
}

// ConditionOr returns the Instance's condition of type t, or def.
func ConditionOr(inst *computev1alpha.Instance, t string, def metav1.Condition) metav1.Condition {
	if c := meta.FindStatusCondition(inst.Status.Conditions, t); c != nil {
		return *c
	}
	return def
}

// Writer writes a provider's status and finalizer on Instances.
type Writer struct {
	// Client writes to the cell.
	Client client.Client
	// Clock stamps condition transitions.
	Clock clock.PassiveClock
	// FieldOwner is the provider's server-side apply field manager.
	FieldOwner string
	// AddressesFromNetwork leaves the addresses to the networking
	// integration: the Writer never sends or compares them.
	AddressesFromNetwork bool
	// Own records every write the Writer makes, so the provider recognises
	// the Instance versions they superseded (Own.Stale: the event of the
	// write is on its way). It belongs to the provider's memory, which
	// forgets a gone Instance in one place. Required.
	Own *ownwrites.Tracker
}

// Get reads the Instance a provider is asked to reconcile, the start every
// provider's Reconcile shares. It returns nil, and no error, when the
// provider has nothing to do with it now: the Instance is gone (the Writer
// calls gone, if set, for the provider's memory to forget key, Own
// included), or the cache still shows a version one of the Writer's
// own writes superseded (the event of that write is on its way).
func (w *Writer) Get(ctx context.Context, key types.NamespacedName, gone func()) (*computev1alpha.Instance, error) {
	inst := &computev1alpha.Instance{}
	if err := w.Client.Get(ctx, key, inst); err != nil {
		if apierrors.IsNotFound(err) {
			if gone != nil {
				gone()
			}
			return nil, nil
		}
		return nil, err
	}
	if w.Own.Stale(key, inst.UID, inst.ResourceVersion) {
		return nil, nil
	}
	return inst, nil
}

// Stages are what a provider does with an Instance, by the stage it is
// in (see Writer.Dispatch).
type Stages struct {
	// Run runs, or reports on, an Instance that is to run.
	Run func(context.Context, *computev1alpha.Instance) (ctrl.Result, error)
	// Teardown stops an Instance being deleted.
	Teardown func(context.Context, *computev1alpha.Instance) (ctrl.Result, error)
	// Suspend stops a suspended Instance and keeps it.
	Suspend func(context.Context, *computev1alpha.Instance) (ctrl.Result, error)
}

// Dispatch is the Reconcile every provider shares: it reads the Instance
// of key (Get: nothing to do when it is gone or superseded) and hands it
// to the stage it is in: Teardown when it is being deleted, none while
// scheduling gates hold it (nothing runs until they are released),
// Suspend when it is suspended, Run otherwise.
func (w *Writer) Dispatch(ctx context.Context, key types.NamespacedName, gone func(), stages Stages) (ctrl.Result, error) {
	inst, err := w.Get(ctx, key, gone)
	switch {
	case inst == nil || err != nil:
		return ctrl.Result{}, err
	case inst.DeletionTimestamp != nil:
		return stages.Teardown(ctx, inst)
	case Gated(inst):
		return ctrl.Result{}, nil
	case computev1alpha.IsSuspended(inst.Annotations):
		return stages.Suspend(ctx, inst)
	}
	return stages.Run(ctx, inst)
}

// Gated reports an Instance still held by scheduling gates: no provider
// runs it until the gates are released.
func Gated(inst *computev1alpha.Instance) bool {
	return inst.Spec.Controller != nil && len(inst.Spec.Controller.SchedulingGates) > 0
}

// ApplyStatus writes want with server-side apply, only when it differs
// from what the Instance reports; inst moves to the version written.
func (w *Writer) ApplyStatus(ctx context.Context, inst *computev1alpha.Instance, want Status) error {
	now := metav1.NewTime(w.Clock.Now())
	merged := append([]metav1.Condition(nil), inst.Status.Conditions...)
	changed := false
	for _, c := range want.Conditions {
		c.ObservedGeneration = inst.Generation
		c.Message = status.Truncate(c.Message)
		changed = status.SetCondition(&merged, c, now) || changed
	}
	have := Current(inst)
	sameIfaces := len(have.Interfaces) == 0 && len(want.Interfaces) == 0 || equality.Semantic.DeepEqual(have.Interfaces, want.Interfaces)
	if w.AddressesFromNetwork {
		want.Interfaces, sameIfaces = nil, true
	}
	if !changed && have.Hash == want.Hash && sameIfaces {
		return nil
	}

	st := map[string]any{"controller": map[string]any{"observedTemplateHash": want.Hash}}
	conds := make([]any, 0, len(want.Conditions))
	for _, c := range want.Conditions {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta.FindStatusCondition(merged, c.Type))
		if err != nil {
			return fmt.Errorf("failed to encode condition %s: %w", c.Type, err)
		}
		conds = append(conds, u)
	}
	st["conditions"] = conds
	if len(want.Interfaces) > 0 {
		ifaces := make([]any, 0, len(want.Interfaces))
		for i := range want.Interfaces {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want.Interfaces[i])
			if err != nil {
				return fmt.Errorf("failed to encode network interface status: %w", err)
			}
			ifaces = append(ifaces, u)
		}
		st["networkInterfaces"] = ifaces
	}
	obj := instance(map[string]any{"name": inst.Name, "namespace": inst.Namespace, "uid": string(inst.UID)})
	obj.Object["status"] = st
	err := w.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(w.FieldOwner), client.ForceOwnership)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to apply status of Instance %s: %w", inst.Name, err)
	}
	if err == nil {
		w.wrote(inst, obj.GetResourceVersion())
	}
	return nil
}

// ApplyFinalizer adds (present) or removes finalizer on inst with
// server-side apply. A gone Instance is not an error.
func (w *Writer) ApplyFinalizer(ctx context.Context, inst *computev1alpha.Instance, finalizer string, present bool) error {
	md := map[string]any{"name": inst.Name, "namespace": inst.Namespace, "uid": string(inst.UID)}
	if present {
		md["finalizers"] = []any{finalizer}
	}
	obj := instance(md)
	err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(w.FieldOwner), client.ForceOwnership)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// With ownership forced, a conflict can only be the UID: this
		// Instance is gone (and the UID keeps apply from recreating it).
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to apply the finalizer of Instance %s: %w", inst.Name, err)
	}
	w.wrote(inst, obj.GetResourceVersion())
	return nil
}

// instance is an Instance apply configuration with metadata md.
func instance(md map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": computev1alpha.GroupVersion.String(),
		"kind":       computev1alpha.InstanceKind,
		"metadata":   md,
	}}
}

// wrote records that a write turned inst into version rv, and moves inst
// to that version for the writes that follow.
func (w *Writer) wrote(inst *computev1alpha.Instance, rv string) {
	w.Own.Wrote(client.ObjectKeyFromObject(inst), inst.UID, rv)
	inst.ResourceVersion = rv
}
