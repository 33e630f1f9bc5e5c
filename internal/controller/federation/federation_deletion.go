package federation

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// reconcileDelete deletes the hub copy of a project WorkloadDeployment that
// is being deleted and then releases the federation finalizer. While the
// hub cannot be reached the finalizer stays, the Federated condition says
// why, and the error is retried with backoff: the deletion is never
// bypassed, and it completes as soon as the hub answers.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) error {
	if !controllerutil.ContainsFinalizer(s.wd, computev1alpha.FederationFinalizer) {
		return nil
	}
	hubNamespace, err := r.hubNamespaceOf(ctx, s)
	if err == nil && hubNamespace != "" {
		err = r.deleteHubCopy(ctx, s, hubNamespace)
	}
	if err != nil {
		cond := failedCondition("cannot delete the copy in the federation plane, so the WorkloadDeployment is kept until it can: " + err.Error())
		return errors.Join(err, r.patchStatus(ctx, s, nil, cond))
	}
	if hubNamespace != "" {
		// The PolicyReconciler would get there too; doing it here removes
		// the city's policy with its last deployment, promptly.
		if err := ReconcileCityPolicy(ctx, r.Locks, r.Hub, r.HubReader, hubNamespace, s.wd.Spec.CityCode); err != nil {
			ctrl.LoggerFrom(ctx).Info("The city's PropagationPolicy is left to the policy controller", "error", err.Error())
		}
	}
	return r.setFinalizer(ctx, s, false)
}

// hubNamespaceOf returns the hub namespace of a WorkloadDeployment being
// deleted: derived from its namespace's UID, else (the namespace is gone)
// the one recorded on it; empty when it was never federated.
func (r *Reconciler) hubNamespaceOf(ctx context.Context, s *scope) (string, error) {
	ns := &corev1.Namespace{}
	err := s.reader.Get(ctx, client.ObjectKey{Name: s.wd.Namespace}, ns)
	switch {
	case err == nil:
		return names.FederationNamespace(ns.UID), nil
	case apierrors.IsNotFound(err):
		return s.wd.Annotations[computev1alpha.FederationNamespaceAnnotation], nil
	default:
		return "", fmt.Errorf("failed to read project namespace %s: %w", s.wd.Namespace, err)
	}
}

// deleteHubCopy deletes the hub copy of s.wd in hubNamespace. It reads the
// hub directly — a copy created moments ago may not be in the cache yet,
// and releasing the finalizer on a stale read would orphan it — and never
// deletes a copy that belongs to another project namespace.
func (r *Reconciler) deleteHubCopy(ctx context.Context, s *scope, hubNamespace string) error {
	key := client.ObjectKey{Namespace: hubNamespace, Name: s.wd.Name}
	existing := &computev1alpha.WorkloadDeployment{}
	err := r.HubReader.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read the copy of WorkloadDeployment %s in the federation plane: %w", s.wd.Name, err)
	}
	if !BelongsTo(existing, s.cluster, s.wd.Namespace) {
		ctrl.LoggerFrom(ctx).Info("Leaving a federation-plane WorkloadDeployment of the same name that is not this deployment's copy",
			"copy", klog.KObj(existing))
		return nil
	}
	r.lags.forget(existing.UID)
	if existing.DeletionTimestamp != nil {
		return nil
	}
	err = r.Hub.Delete(ctx, existing, client.Preconditions{UID: &existing.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete the copy of WorkloadDeployment %s in the federation plane: %w", s.wd.Name, err)
	}
	s.recorder.Eventf(s.wd, nil, corev1.EventTypeNormal, EventHubCopyDeleted, "Delete",
		"Deleted the copy in namespace %s of the federation plane", hubNamespace)
	return nil
}
