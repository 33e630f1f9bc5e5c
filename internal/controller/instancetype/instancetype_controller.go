package instancetype

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/patch"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "instancetype"

// Reconciler keeps the status of the InstanceTypes of every project plane of
// a multicluster manager.
type Reconciler struct {
	// Manager resolves the project plane of each request.
	Manager mcmanager.Manager
	// Clock stamps status.deprecatedAt and condition transitions; the real
	// clock when nil.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instancetypes,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instancetypes/status,verbs=get;patch;update

// SetupWithManager registers the reconciler with mgr: it watches
// InstanceTypes, and reconciles a type again when its replacement changes.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if mgr == nil {
		return errors.New("instancetype controller: a manager is required")
	}
	r.Manager = mgr
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation: mgr.GetControllerOptions().SkipNameValidation,
		}).
		For(&computev1alpha.InstanceType{}).
		Watches(&computev1alpha.InstanceType{}, enqueueReferrers).
		Complete(r)
}

// Reconcile brings the status of one InstanceType of one project plane up to
// date.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if req.ClusterName == "" {
		// The empty name is the host cluster; the catalog the controller
		// keeps lives in the project planes.
		log.Info("Dropping an InstanceType request without a cluster name", "instanceType", req.Name)
		return ctrl.Result{}, nil
	}
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get project cluster %q: %w", req.ClusterName, err)
	}
	ctx = ctrl.LoggerInto(ctx, log.WithValues("cluster", req.ClusterName))
	return ctrl.Result{}, r.reconcile(ctx, cl.GetClient(), req.Name)
}

// reconcile reads the InstanceType name and its replacement, and patches its
// status when the verdict changed.
func (r *Reconciler) reconcile(ctx context.Context, c client.Client, name string) error {
	it := &computev1alpha.InstanceType{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, it); err != nil {
		return client.IgnoreNotFound(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("instanceType", klog.KObj(it)))
	if !it.DeletionTimestamp.IsZero() {
		return nil
	}
	o, err := observe(ctx, c, it)
	if err != nil {
		return err
	}
	st := computeStatus(o, r.Clock.Now())
	_, err = patch.Status(ctx, c, it, func(it *computev1alpha.InstanceType) { it.Status = st })
	return err
}

// observe reads what the status of it depends on besides it: the replacement
// it names.
func observe(ctx context.Context, c client.Reader, it *computev1alpha.InstanceType) (observation, error) {
	o := observation{it: it}
	rep := it.Spec.Lifecycle.ReplacementInstanceType
	if rep == "" {
		return o, nil
	}
	r := &computev1alpha.InstanceType{}
	switch err := c.Get(ctx, client.ObjectKey{Name: rep}, r); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return o, fmt.Errorf("failed to get replacement InstanceType %s: %w", rep, err)
	default:
		o.replacement = r
	}
	return o, nil
}

// enqueueReferrers enqueues the InstanceTypes of the cluster that name the
// type that changed as their replacement, so their Ready condition follows
// the replacement's existence and phase.
func enqueueReferrers(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		var list computev1alpha.InstanceTypeList
		if err := cl.GetCache().List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list InstanceTypes to map a replacement", "cluster", clusterName, "instanceType", obj.GetName())
			return nil
		}
		var out []mcreconcile.Request
		for _, it := range list.Items {
			if it.Name == obj.GetName() || it.Spec.Lifecycle.ReplacementInstanceType != obj.GetName() {
				continue
			}
			out = append(out, mcreconcile.Request{
				Request:     reconcile.Request{NamespacedName: types.NamespacedName{Name: it.Name}},
				ClusterName: clusterName,
			})
		}
		return out
	})
}
