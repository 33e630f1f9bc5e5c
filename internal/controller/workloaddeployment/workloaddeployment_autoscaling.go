package workloaddeployment

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Autoscaling (internal/controller/autoscaler). While a deployment's
// scaleSettings autoscale, the cell's HorizontalPodAutoscaler of compute's
// (named as the deployment, controlled by it) sets spec.replicas through
// the scale subresource, and this controller keeps that many Instances,
// within [minReplicas, maxReplicas]. While no such HPA exists, the count is
// minReplicas, whatever spec.replicas an autoscaler left behind: the cell
// serves no metrics (MetricsUnavailable), or an HPA compute did not create
// holds the name (AutoscalerNotOwned), or the autoscaler has not been
// looked at yet. Two exceptions keep the count spec.replicas says (within
// the bounds): a suspended deployment, whose HPA is removed while it
// sleeps, keeps the count it was suspended at until its HPA is back, and
// so does a deployment whose HPA is being created (AutoscalingReady
// Unknown, AwaitingAutoscaler), so a resume or a restart of the autoscaler
// does not scale the deployment down to come back up. A rollout replaces
// the Instances at the current autoscaled count.

// replicasFor is the count of Instances wd is kept at: desiredReplicas, or
// with autoscaling autoscaledReplicas given whether the cell holds wd's own
// HPA (read from the cache).
func (r *Reconciler) replicasFor(ctx context.Context, wd *computev1alpha.WorkloadDeployment) (int32, error) {
	if !wd.Spec.ScaleSettings.Autoscales() {
		return desiredReplicas(wd), nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(wd), hpa)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("failed to read the HorizontalPodAutoscaler of WorkloadDeployment %s: %w", wd.Name, err)
	}
	return autoscaledReplicas(wd, err == nil && metav1.IsControlledBy(hpa, wd)), nil
}

// autoscaledReplicas is the count of an autoscaling deployment (see the
// comment above): spec.replicas within the bounds while its own HPA acts,
// while it is suspended and while its HPA is being set up; otherwise
// minReplicas.
func autoscaledReplicas(wd *computev1alpha.WorkloadDeployment, ownHPA bool) int32 {
	s := wd.Spec.ScaleSettings
	floor := max(s.MinReplicas, 0)
	ceiling := floor
	if s.MaxReplicas != nil {
		ceiling = max(*s.MaxReplicas, floor)
	}
	bounded := min(max(desiredReplicas(wd), floor), ceiling)
	if ownHPA || computev1alpha.IsSuspended(wd.Annotations) {
		return bounded
	}
	if c := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionAutoscalingReady); c != nil &&
		(c.Reason == computev1alpha.ReasonAutoscalingSuspended || c.Reason == computev1alpha.ReasonAwaitingAutoscaler) {
		return bounded
	}
	return floor
}

// hpaCreatedOrDeleted lets through the HPA events that change what
// replicasFor finds: an HPA appearing or going. The HPA's own status
// updates (every sync period) bring nothing.
var hpaCreatedOrDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// deploymentOfHPA enqueues the deployment an HPA is named after.
func deploymentOfHPA(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// hpaHandler brings a deployment back when an HPA of its name appears or
// goes.
var hpaHandler = handler.EnqueueRequestsFromMapFunc(deploymentOfHPA)
