package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/status"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "autoscaler"

// Reconciler keeps one HorizontalPodAutoscaler per autoscaling
// WorkloadDeployment of the cell and reports its verdicts on the
// deployment (see the package documentation).
type Reconciler struct {
	// Client reads from the manager's cache and writes to the cell.
	Client client.Client
	// Metrics tells whether the cell serves the resource metrics API.
	Metrics MetricsAPI
	// Clock stamps condition transitions.
	Clock clock.PassiveClock
	// RecheckAfter is how soon a deployment waiting for the metrics API
	// is looked at again; DefaultRecheckAfter when zero.
	RecheckAfter time.Duration
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager checks the reconciler's dependencies and registers the
// controller. Every HPA event brings back the deployment of the HPA's
// name: its own HPA's, and a stray's, whose arrival or removal changes
// what the deployment may do.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("autoscaler controller: Client is required")
	case r.Metrics == nil:
		return errors.New("autoscaler controller: Metrics is required")
	case r.Clock == nil:
		return errors.New("autoscaler controller: Clock is required")
	case r.RecheckAfter < 0:
		return fmt.Errorf("autoscaler controller: RecheckAfter %s is negative", r.RecheckAfter)
	}
	if r.RecheckAfter == 0 {
		r.RecheckAfter = DefaultRecheckAfter
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.WorkloadDeployment{}).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(sameName)).
		Complete(r)
}

// sameName enqueues the deployment an HPA is named after.
func sameName(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// Reconcile brings a deployment's HPA in step with its scaleSettings and
// reports the result on the deployment.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wd := &computev1alpha.WorkloadDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, wd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wd.DeletionTimestamp.IsZero() {
		// The garbage collector removes the HPA with its owner.
		return ctrl.Result{}, nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := r.Client.Get(ctx, req.NamespacedName, hpa); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to read the HorizontalPodAutoscaler %s: %w", req.NamespacedName, err)
		}
		hpa = nil
	}
	owned := hpa != nil && metav1.IsControlledBy(hpa, wd)
	if !wd.Spec.ScaleSettings.Autoscales() {
		if owned {
			if err := r.deleteHPA(ctx, hpa); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, r.writeStatus(ctx, wd, nil)
	}
	v, result, err := r.decide(ctx, wd, hpa, owned)
	if err != nil {
		return ctrl.Result{}, errors.Join(err, r.writeStatus(ctx, wd, v))
	}
	return result, r.writeStatus(ctx, wd, v)
}

// decide acts on a deployment that autoscales: leaves a stray HPA alone,
// deletes its own while the deployment is suspended or the cell has no
// metrics, and otherwise creates or updates it. It returns the verdict to
// report and when to look again.
func (r *Reconciler) decide(ctx context.Context, wd *computev1alpha.WorkloadDeployment, hpa *autoscalingv2.HorizontalPodAutoscaler, owned bool) (*verdict, ctrl.Result, error) {
	if hpa != nil && !owned {
		return &verdict{status: metav1.ConditionFalse, reason: computev1alpha.ReasonAutoscalerNotOwned,
			message: fmt.Sprintf("the cell holds a HorizontalPodAutoscaler %s that compute did not create: it is left alone and nothing autoscales this deployment", hpa.Name)}, ctrl.Result{}, nil
	}
	var stop *verdict
	var result ctrl.Result
	if computev1alpha.IsSuspended(wd.Annotations) {
		stop = &verdict{status: metav1.ConditionFalse, reason: computev1alpha.ReasonAutoscalingSuspended,
			message: "the deployment is suspended: its autoscaler is removed until it is resumed"}
	} else {
		available, err := r.Metrics.Available(ctx)
		if err != nil {
			return &verdict{status: metav1.ConditionUnknown, reason: computev1alpha.ReasonAwaitingAutoscaler,
				message: fmt.Sprintf("cannot tell whether the cell serves resource metrics: %v", err)}, ctrl.Result{}, err
		}
		if !available {
			stop = &verdict{status: metav1.ConditionFalse, reason: computev1alpha.ReasonMetricsUnavailable,
				message: fmt.Sprintf("the cell serves no resource metrics (%s): the deployment is held at minReplicas (%d)", MetricsGroupVersion, wd.Spec.ScaleSettings.MinReplicas)}
			result.RequeueAfter = r.RecheckAfter
		}
	}
	if stop != nil {
		if owned {
			return stop, result, r.deleteHPA(ctx, hpa)
		}
		return stop, result, nil
	}
	hpa, err := r.ensureHPA(ctx, wd, hpa)
	if err != nil {
		return &verdict{status: metav1.ConditionUnknown, reason: computev1alpha.ReasonAwaitingAutoscaler,
			message: fmt.Sprintf("the autoscaler could not be written: %v", err)}, ctrl.Result{}, err
	}
	v := &verdict{hpa: hpa}
	if ready, _ := v.conditions(); ready.Status == metav1.ConditionFalse {
		// An HPA that cannot scale may have lost the metrics API: look
		// again when the discovery answer is due, as no event would come.
		result.RequeueAfter = r.RecheckAfter
	}
	return v, result, nil
}

// ensureHPA creates the deployment's HPA, or updates the one it owns when
// its spec or labels fell out of step, and returns it.
func (r *Reconciler) ensureHPA(ctx context.Context, wd *computev1alpha.WorkloadDeployment, have *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	want := desiredHPA(wd)
	if have == nil {
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, fmt.Errorf("failed to create the HorizontalPodAutoscaler %s: %w", want.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Created the HorizontalPodAutoscaler", "min", *want.Spec.MinReplicas, "max", want.Spec.MaxReplicas)
		return want, nil
	}
	if inStep(have, want) {
		return have, nil
	}
	upd := have.DeepCopy()
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		upd.Labels[k] = v
	}
	upd.Spec.ScaleTargetRef, upd.Spec.MinReplicas, upd.Spec.MaxReplicas, upd.Spec.Metrics =
		want.Spec.ScaleTargetRef, want.Spec.MinReplicas, want.Spec.MaxReplicas, want.Spec.Metrics
	// The update carries the resourceVersion read: a conflict is retried.
	if err := r.Client.Update(ctx, upd); err != nil {
		return nil, fmt.Errorf("failed to update the HorizontalPodAutoscaler %s: %w", upd.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated the HorizontalPodAutoscaler", "min", *want.Spec.MinReplicas, "max", want.Spec.MaxReplicas)
	return upd, nil
}

// deleteHPA deletes an HPA of compute's; the UID precondition keeps it
// from deleting a successor of the same name.
func (r *Reconciler) deleteHPA(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	err := r.Client.Delete(ctx, hpa, client.Preconditions{UID: &hpa.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete the HorizontalPodAutoscaler %s: %w", hpa.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the HorizontalPodAutoscaler")
	return nil
}

// writeStatus writes the autoscaling conditions and status.autoscaling of
// v, or removes them when v is nil (the deployment does not autoscale);
// only when they changed.
func (r *Reconciler) writeStatus(ctx context.Context, wd *computev1alpha.WorkloadDeployment, v *verdict) error {
	conds := append([]metav1.Condition(nil), wd.Status.Conditions...)
	var st *computev1alpha.AutoscalingStatus
	if v == nil {
		meta.RemoveStatusCondition(&conds, computev1alpha.ConditionAutoscalingReady)
		meta.RemoveStatusCondition(&conds, computev1alpha.ConditionAutoscalingLimited)
	} else {
		now := metav1.NewTime(r.Clock.Now())
		ready, limited := v.conditions()
		for _, c := range []metav1.Condition{ready, limited} {
			c.ObservedGeneration = wd.Generation
			c.Message = status.Truncate(c.Message)
			status.SetCondition(&conds, c, now)
		}
		st = autoscalingStatus(wd, v.hpa)
	}
	if equality.Semantic.DeepEqual(conds, wd.Status.Conditions) && equality.Semantic.DeepEqual(st, wd.Status.Autoscaling) {
		return nil
	}
	// The lock keeps a status computed from an old read from undoing what
	// the WorkloadDeployment controller wrote meanwhile. A conflict is not
	// an error: the newer object's event brings the deployment back.
	_, err := patch.Status(ctx, r.Client, wd, func(wd *computev1alpha.WorkloadDeployment) {
		wd.Status.Conditions = conds
		wd.Status.Autoscaling = st
	}, patch.WithOptimisticLock())
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
