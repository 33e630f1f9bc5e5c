package instance

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/lazymetrics"
	"github.com/citycells/compute/internal/phases"
	"github.com/citycells/compute/internal/referenceddata"
	"github.com/citycells/compute/internal/referenceddata/cellcompanions"
	"github.com/citycells/compute/internal/status"
)

// The Instance controller reads the companions of the cell (their
// metadata, from the companions' cache) to release the ReferencedData gate.
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch

// GateWaitMetric observes, for each Instance whose ReferencedData gate is
// released, the seconds from its creation to the release: how long its
// referenced data took to reach the cell. Part of compute's operational
// contract.
const GateWaitMetric = "compute_referenced_data_gate_wait_seconds"

var gateWait = lazymetrics.Histogram(GateWaitMetric,
	"Seconds from an Instance's creation to the release of its ReferencedData scheduling gate.",
	[]float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800})

// registerMetrics registers the controller's metrics on controller-runtime's
// registry, once: binaries without the cell role expose none of them.
var registerMetrics = lazymetrics.NewSet(func() {
	// The refusals alerted on exist from the start, at zero.
	quotaRefusals.WithLabelValues(computev1alpha.ReasonQuotaExceeded)
	quotaRefusals.WithLabelValues(computev1alpha.ReasonQuotaNoBudget)
}, gateWait, quotaWait, quotaRefusals).Register

// checkReferencedData decides, for an Instance the ReferencedData gate
// holds, whether every companion its WorkloadDeployment expects is in the
// Instance's namespace at the expected version (referenceddata.Decide). It
// is level-based: the verdict is recomputed from the deployment's
// annotations and the companions present on every reconcile, and the gate
// is only ever removed, so an Instance that runs keeps running when a
// companion goes later. Nothing is requeued while it waits: a companion
// or an annotation that changes brings the Instance back.
func (r *Reconciler) checkReferencedData(ctx context.Context, s *scope) (phases.Result, error) {
	if !hasGate(s.inst, computev1alpha.ReferencedDataSchedulingGate) {
		return phases.Result{}, nil
	}
	// A deployment that is gone takes its Instances with it; meanwhile
	// nothing is expected of it, which Decide reports as Resolving.
	expected, _, err := cellcompanions.ExpectedFor(ctx, r.Client, s.inst)
	if err != nil {
		return phases.Result{}, err
	}
	present, err := cellcompanions.Present(ctx, r.Companions, s.inst.Namespace)
	if err != nil {
		return phases.Result{}, err
	}
	v := referenceddata.Decide(expected, present)
	s.data = &v
	return phases.Result{}, nil
}

// referencedDataCondition returns the ReferencedDataReady condition to
// apply: the verdict's while the gate holds the Instance, else the one the
// Instance has (re-applied as it is, since leaving it out of the apply
// would remove it); false when there is none.
func referencedDataCondition(inst *computev1alpha.Instance, v *referenceddata.Verdict) (metav1.Condition, bool) {
	if v == nil {
		if c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReferencedDataReady); c != nil {
			return *c, true
		}
		return metav1.Condition{}, false
	}
	c := metav1.Condition{
		Type:               computev1alpha.ConditionReferencedDataReady,
		Status:             metav1.ConditionFalse,
		Reason:             v.Reason,
		Message:            status.Truncate(v.Message),
		ObservedGeneration: inst.Generation,
	}
	if v.Ready {
		c.Status = metav1.ConditionTrue
	}
	return c, true
}

// dataBlocker is why the ReferencedData gate holds an Instance, for Ready.
func dataBlocker(v *referenceddata.Verdict) status.Blocker {
	switch {
	case v == nil:
		return status.Blocker{Reason: computev1alpha.ReasonAwaitingPropagation,
			Message: "waiting for the referenced ConfigMaps and Secrets to reach the cell"}
	case v.Ready:
		return status.Blocker{Reason: computev1alpha.ReasonAwaitingPropagation,
			Message: "the referenced ConfigMaps and Secrets are in the cell; releasing the ReferencedData scheduling gate"}
	default:
		return status.Blocker{Reason: v.Reason, Message: v.Message}
	}
}

// observeGateWait records how long an Instance waited for its referenced
// data, once its ReferencedData gate is released.
func (r *Reconciler) observeGateWait(inst *computev1alpha.Instance) {
	gateWait.Observe(max(r.Clock.Since(inst.CreationTimestamp.Time), 0).Seconds())
}

// referencedDataChanged passes the WorkloadDeployment events that can
// change a verdict: a deployment that appears or goes, and an update of
// the annotations that say what its cell must hold. Its status writes do
// not bring its Instances back.
var referencedDataChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return referenceddata.Changed(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
	},
}

// gatedInstancesOf maps a WorkloadDeployment to its Instances that the
// ReferencedData gate holds.
func (r *Reconciler) gatedInstancesOf(ctx context.Context, wd client.Object) []reconcile.Request {
	return r.gatedInstances(ctx, wd.GetNamespace(), func(inst *computev1alpha.Instance) bool {
		return cellcompanions.DeploymentOf(inst) == wd.GetName()
	})
}

// gatedInstancesNear maps a companion to the Instances of its namespace
// that the ReferencedData gate holds.
func (r *Reconciler) gatedInstancesNear(ctx context.Context, companion *metav1.PartialObjectMetadata) []reconcile.Request {
	return r.gatedInstances(ctx, companion.Namespace, func(*computev1alpha.Instance) bool { return true })
}

// gatedInstances lists the Instances of namespace the ReferencedData gate
// holds that match.
func (r *Reconciler) gatedInstances(ctx context.Context, namespace string, match func(*computev1alpha.Instance) bool) []reconcile.Request {
	var list computev1alpha.InstanceList
	// Read-only: the cache's objects are not copied.
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Instances waiting for referenced data", "namespace", klog.KRef("", namespace))
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		inst := &list.Items[i]
		if inst.DeletionTimestamp == nil && hasGate(inst, computev1alpha.ReferencedDataSchedulingGate) && match(inst) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: inst.Namespace, Name: inst.Name}})
		}
	}
	return out
}

// companionEvents enqueues the gated Instances of a companion's namespace.
func (r *Reconciler) companionEvents() handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(r.gatedInstancesNear)
}
