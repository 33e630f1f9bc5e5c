package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/pendingfirst"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "workload"

// DefaultMaxConcurrentReconciles is the number of Workloads reconciled at
// once unless Reconciler.MaxConcurrentReconciles says otherwise. One worker
// made a restarted manager walk its whole initial list one Workload at a
// time, an edit made meanwhile waiting its turn; a Workload's reconcile is
// mostly waiting on its writes.
const DefaultMaxConcurrentReconciles = 4

// Reconciler is the WorkloadReconciler: it keeps the WorkloadDeployments,
// revisions and status of Workloads in every project cluster of a
// multicluster manager.
type Reconciler struct {
	// Manager resolves the project cluster of each request.
	Manager mcmanager.Manager
	// Clock stamps revisions and condition transitions; the real clock when
	// nil.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Reachable says whether a city's cells are heard from (the cell
	// reachability tracker), for choosing failover fallbacks; nil: every
	// city is.
	Reachable func(city string) bool
	// FailoverRate limits how many Workloads a second start or move a
	// failover (NewFailoverLimiter); nil: no limit.
	FailoverRate *rate.Limiter
	// RequireAdmission holds the Workloads of a project plane that does
	// not send them to compute's validating webhook (admissionEnforced):
	// their changes are not federated until it does. Set wherever the
	// webhooks are served (not with --disable-webhooks).
	RequireAdmission bool

	// phases counts the Workloads by rollout phase (compute_rollouts).
	phases phaseCounts
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloads/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instancetypes,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.datumapis.com,resources=locationbindings;locations,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler with mgr: it watches Workloads,
// the WorkloadDeployments and revisions they own, and the LocationBindings
// and Locations that decide which cities are bound.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if mgr == nil {
		return errors.New("workload controller: a manager is required")
	}
	r.Manager = mgr
	registerMetrics()
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		// The multicluster builder does not apply the manager's global
		// name validation setting, as controller-runtime's builder does.
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation:      mgr.GetControllerOptions().SkipNameValidation,
			MaxConcurrentReconciles: r.MaxConcurrentReconciles,
		}).
		For(&computev1alpha.Workload{}).
		// After a restart, a Workload edited while the manager was away
		// goes before the settled ones its list brings.
		Watches(&computev1alpha.Workload{}, pendingfirst.ClusterHandler).
		Owns(&computev1alpha.WorkloadDeployment{}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&networkingv1alpha.LocationBinding{}, enqueueForBinding).
		Watches(&networkingv1alpha.Location{}, enqueueForLocation).
		Watches(&computev1alpha.InstanceType{}, enqueueForInstanceType).
		Complete(r)
}

// Reconcile brings one Workload's deployments, revisions and status up to
// date.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if req.ClusterName == "" {
		// The empty name is the host cluster; a request for a project
		// object must never be served there.
		log.Info("Dropping a Workload request without a cluster name", "workload", req.NamespacedName)
		return ctrl.Result{}, nil
	}
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get project cluster %q: %w", req.ClusterName, err)
	}
	ctx = ctrl.LoggerInto(ctx, log.WithValues("cluster", req.ClusterName))
	return r.reconcile(ctx, cl.GetClient(), cl.GetEventRecorder(ControllerName), workloadKey{cluster: req.ClusterName, NamespacedName: req.NamespacedName})
}

// reconcile brings the Workload wk of the project cluster behind c up to
// date, in Cluster API's shape: read everything into a scope at one time,
// run the planning phases on it (plan), write what they decided and then
// the status, once (apply), and record the events and metrics of the
// outcome (record).
func (r *Reconciler) reconcile(ctx context.Context, c client.Client, recorder events.EventRecorder, wk workloadKey) (ctrl.Result, error) {
	w, err := getWorkload(ctx, c, wk.NamespacedName)
	if w == nil {
		if err == nil {
			// Gone, or being deleted: its phase is no longer counted.
			r.phases.set(wk, "")
		}
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("workload", klog.KObj(w), "uid", w.UID))
	if r.RequireAdmission {
		enforced, why, err := admissionEnforced(ctx, c)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !enforced {
			return unadmitted(ctx, c, recorder, w, why, r.now())
		}
	}
	s, err := r.observe(ctx, c, recorder, w)
	if err != nil {
		return ctrl.Result{}, observationFailed(ctx, s, err)
	}
	p := r.plan(s)
	o := r.apply(ctx, s, p)
	r.record(s, wk, p, o)
	return o.result(p)
}

// now reads the reconciler's clock, once a reconcile (observe).
func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}
