package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/pendingfirst"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/revision"
	"github.com/citycells/compute/internal/workloadstatus"
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

	// phases counts the Workloads by rollout phase (compute_rollouts).
	phases phaseCounts
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloads,verbs=get;list;watch;update
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

// scope is everything one reconcile observed.
type scope struct {
	client   client.Client
	recorder events.EventRecorder
	workload *computev1alpha.Workload
	cities   locations.Cities
	// deployments are the WorkloadDeployments of the namespace.
	deployments []computev1alpha.WorkloadDeployment
	// revisions are the revisions of the Workload.
	revisions []appsv1.ControllerRevision
	// instanceType is the InstanceType the template names; nil when the
	// catalog has none of that name.
	instanceType *computev1alpha.InstanceType
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

// reconcile brings the Workload key of the project cluster behind c up to
// date: observe → revisions → deployments → status, written once.
func (r *Reconciler) reconcile(ctx context.Context, c client.Client, recorder events.EventRecorder, wk workloadKey) (ctrl.Result, error) {
	key := wk.NamespacedName
	w := &computev1alpha.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		if apierrors.IsNotFound(err) {
			r.phases.set(wk, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("workload", klog.KObj(w), "uid", w.UID)
	ctx = ctrl.LoggerInto(ctx, log)
	if !w.DeletionTimestamp.IsZero() {
		// Deployments and revisions carry the Workload as owner: the
		// garbage collector removes them.
		r.phases.set(wk, "")
		return ctrl.Result{}, nil
	}

	if rewritten, err := rewriteCityCodes(ctx, c, w); rewritten || err != nil {
		// The update brings the Workload back; a conflict retries.
		return ctrl.Result{}, err
	}

	s, err := observe(ctx, c, w)
	if err != nil {
		return ctrl.Result{}, r.observationFailed(ctx, c, w, err)
	}
	s.recorder = recorder
	if s.instanceType, err = observeInstanceType(ctx, c, w); err != nil {
		return ctrl.Result{}, r.observationFailed(ctx, c, w, err)
	}

	revPlan, revErr := r.planRevisions(s)
	var current *revision.Current
	if revErr == nil {
		current = &revPlan.Current
	}
	// One pass: the rollout is planned on the cities as observed, then
	// each city's deployment is built once, with the revision it may run.
	targets := placement.Targets(w, s.cities, s.deployments)
	fo := r.planFailover(s, targets)
	targets = append(targets, fo.Fallbacks()...)
	ro := r.planRollout(s, targets, current, fo)
	targets = placement.Expand(w, targets, ro.revisionOf)
	annotateFallbacks(fo, targets)
	// The revision is written while the deployments are: they carry the
	// template's hash, never the revision object, so a new Workload
	// reaches its cities one round trip sooner. A revision that could not
	// be recorded is reported as none, and the error retries both.
	var wg sync.WaitGroup
	if revErr == nil {
		wg.Go(func() {
			var recorded bool
			if recorded, revErr = r.writeRevisions(ctx, s, revPlan); !recorded {
				current = nil
			}
		})
	}
	written, deployErr := reconcileDeployments(ctx, s, targets)
	wg.Wait()
	ro.recordRollout(s)
	if deployErr == nil {
		recordFailover(s, fo)
	}

	st := workloadstatus.Compute(workloadstatus.Input{
		Workload:     w,
		Cities:       written.cities,
		Leaving:      written.leaving,
		Revision:     current,
		Rollout:      ro.status(current),
		Settled:      revErr == nil && deployErr == nil,
		Now:          metav1.NewTime(r.now()),
		InstanceType: s.instanceType,
		Failover:     fo.ByTarget(),
	})
	prevRollout := w.Status.Rollout
	wrote, statusErr := patch.Status(ctx, c, w, func(w *computev1alpha.Workload) { w.Status = st })
	if statusErr == nil && st.Rollout == nil {
		r.phases.set(wk, "")
	}
	if statusErr == nil && st.Rollout != nil {
		r.phases.set(wk, st.Rollout.Phase)
		if wrote {
			timingsOf(prevRollout, st.Rollout, ro.plan, ro.cities, ro.now).observe(st.Rollout.Strategy)
		}
	}
	if err := errors.Join(revErr, deployErr, statusErr); err != nil {
		return ctrl.Result{}, err
	}
	// A soak ending or a progress deadline passing changes the rollout
	// without any object changing.
	return ctrl.Result{RequeueAfter: earliest(ro.plan.RequeueAfter, fo.RequeueAfter)}, nil
}

// earliest is the sooner of two requeues, zero meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// rewriteCityCodes rewrites the deprecated cityCodes of w's placements into
// locationSelectors (placement.RewriteCityCodes), for Workloads stored
// before admission did it, and reports whether it wrote. It changes where
// nothing runs: the placement reads cityCodes as that selector already, and
// the deployments keep their names. A refused write (a Workload admission
// now finds invalid for another reason) is logged and the Workload keeps
// running on its cityCodes; only a conflict is returned, to retry.
func rewriteCityCodes(ctx context.Context, c client.Client, w *computev1alpha.Workload) (bool, error) {
	rewritten := w.DeepCopy()
	changed := false
	for i := range rewritten.Spec.Placements {
		changed = placement.RewriteCityCodes(&rewritten.Spec.Placements[i]) || changed
	}
	if !changed {
		return false, nil
	}
	err := c.Update(ctx, rewritten)
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).Info("Rewrote the deprecated cityCodes of the Workload's placements into locationSelectors")
		return true, nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return false, client.IgnoreNotFound(err)
	default:
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot rewrite the deprecated cityCodes into locationSelectors; the Workload keeps placing by them", "error", err.Error())
		return false, nil
	}
}

// observationFailed reports that what w's status depends on could not be
// read: its conditions turn Unknown (Cluster API's rule: a condition that
// cannot be computed is not left standing) and err is returned to retry.
func (r *Reconciler) observationFailed(ctx context.Context, c client.Client, w *computev1alpha.Workload, err error) error {
	st := workloadstatus.Unknown(w, computev1alpha.ReasonObservationFailed,
		fmt.Sprintf("the management plane cannot read what this condition depends on (%v); it retries", err), metav1.NewTime(r.now()))
	_, statusErr := patch.Status(ctx, c, w, func(w *computev1alpha.Workload) { w.Status = st })
	return errors.Join(err, statusErr)
}

// observe reads what the reconcile of w depends on.
func observe(ctx context.Context, c client.Client, w *computev1alpha.Workload) (*scope, error) {
	cities, err := locations.Load(ctx, c, w.Namespace)
	if err != nil {
		return nil, err
	}
	// The namespace's deployments are read from the cache without a copy
	// each (thousands at scale, every reconcile); only those that can
	// matter to w are copied (deploymentsOf).
	var wds computev1alpha.WorkloadDeploymentList
	if err := c.List(ctx, &wds, client.InNamespace(w.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("failed to list WorkloadDeployments in namespace %s: %w", w.Namespace, err)
	}
	var revs appsv1.ControllerRevisionList
	if err := c.List(ctx, &revs, client.InNamespace(w.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(w.UID)}); err != nil {
		return nil, fmt.Errorf("failed to list ControllerRevisions of Workload %s: %w", w.Name, err)
	}
	return &scope{
		client:      c,
		workload:    w,
		cities:      cities,
		deployments: deploymentsOf(w, wds.Items),
		revisions:   revision.Owned(w, revs.Items),
	}, nil
}

// deploymentNamePrefixLength bounds the part of a Workload's name that
// begins every WorkloadDeployment name it plans: names.WorkloadDeploymentName
// keeps at least the first 63 − 13 = 50 characters for a three-letter city
// code (the only codes the API admits); 16 leaves room for any code up to
// 37 characters.
const deploymentNamePrefixLength = 16

// deploymentsOf returns deep copies of the deployments of the namespace,
// listed from the cache without copies, that can matter to w: those that
// belong to w or carry its UID label (its own, to update or delete) and
// those whose name begins like every deployment name planned for w (a name
// taken by another Workload's deployment is a conflict). Any other
// deployment is neither updated, deleted nor a conflict for w, so leaving it
// out changes nothing but the memory and time of the copies.
func deploymentsOf(w *computev1alpha.Workload, all []computev1alpha.WorkloadDeployment) []computev1alpha.WorkloadDeployment {
	prefix := strings.TrimRight(w.Name[:min(len(w.Name), deploymentNamePrefixLength)], "-.")
	var out []computev1alpha.WorkloadDeployment
	for i := range all {
		wd := &all[i]
		if placement.BelongsTo(wd, w.UID) || wd.Labels[computev1alpha.WorkloadUIDLabel] == string(w.UID) || strings.HasPrefix(wd.Name, prefix) {
			out = append(out, *wd.DeepCopy())
		}
	}
	return out
}
