package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/hubclients"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/pendingfirst"
	"github.com/citycells/compute/internal/phases"
	"github.com/citycells/compute/internal/referenceddata"
)

// ControllerName names the federator in logs, metrics and events.
const ControllerName = "workloaddeployment-federator"

// DefaultMaxConcurrentReconciles is the number of WorkloadDeployments
// federated at once unless Reconciler.MaxConcurrentReconciles says
// otherwise.
const DefaultMaxConcurrentReconciles = 8

// Event reasons.
const (
	// EventFederated: the hub copy was created.
	EventFederated = "Federated"
	// EventFederationFailed: the hub copy could not be written or removed.
	EventFederationFailed = "FederationFailed"
	// EventHubCopyDeleted: the hub copy was deleted with the
	// WorkloadDeployment.
	EventHubCopyDeleted = "HubCopyDeleted"
)

// Reconciler is the WorkloadDeploymentFederator: it keeps a copy of every
// project WorkloadDeployment in the federation plane and mirrors the copy's
// status back.
type Reconciler struct {
	// Manager resolves the project cluster of each request.
	Manager mcmanager.Manager
	// Hub reads the federation plane from its cache and writes to it.
	Hub client.Client
	// HubReader reads the federation plane directly, for the decisions a
	// stale cache must not make (releasing the finalizer).
	HubReader client.Reader
	// Locks serialise the policy decisions per city with the
	// PolicyReconciler's; share them (SetupWithManager makes its own when
	// nil).
	Locks *CityLocks
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Health tells whether each city's cell is heard from; the status of a
	// deployment whose city is not is marked stale. Nil trusts every city.
	Health CityHealth
	// StatusResyncAfter is how long a hub copy's status may lag its
	// generation before Karmada is asked to collect it again;
	// DefaultStatusResyncAfter when zero.
	StatusResyncAfter time.Duration

	// lags remembers since when each hub copy's status has lagged.
	lags lagTracker
	// cities remembers the deployment cities recorded (recordCity).
	cities cityRecords
}

// CityHealth tells whether the cell of a city is heard from (package
// cellhealth's Tracker).
type CityHealth interface {
	// CityReachability reports city: unreachable, when it was last heard
	// from, and a message saying which signal says so.
	CityReachability(city string) (unreachable bool, lastSeen time.Time, message string)
	// OnChange registers fn, called with a city's code when its verdict
	// changes.
	OnChange(fn func(city string))
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy.karmada.io,resources=propagationpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the federator with mgr. It watches the project
// WorkloadDeployments of every engaged project cluster, and the hub copies
// in hubCluster, whose events it maps back to the project request with the
// project cluster name preserved. hubCluster must be added to mgr's local
// manager by the caller (it is shared with other controllers).
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager, hubCluster cluster.Cluster) error {
	switch {
	case mgr == nil:
		return errors.New("federator: a manager is required")
	case hubCluster == nil:
		return errors.New("federator: the federation plane is required (--federation-kubeconfig)")
	}
	r.Manager = mgr
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Locks == nil {
		r.Locks = &CityLocks{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if r.StatusResyncAfter <= 0 {
		r.StatusResyncAfter = DefaultStatusResyncAfter
	}
	b := mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation:      mgr.GetControllerOptions().SkipNameValidation,
			MaxConcurrentReconciles: r.MaxConcurrentReconciles,
		}).
		// The federator's own status writes need no reconcile.
		For(&computev1alpha.WorkloadDeployment{}, mcbuilder.WithPredicates(specOrMetadataChanged())).
		// After a restart, a deployment whose change its cell has not
		// reported yet goes before the settled ones its list brings.
		Watches(&computev1alpha.WorkloadDeployment{}, pendingfirst.ClusterHandler).
		WatchesRawSource(source.TypedKind[*computev1alpha.WorkloadDeployment, mcreconcile.Request](hubCluster.GetCache(), &computev1alpha.WorkloadDeployment{},
			mchandler.TypedEnqueueRequestsFromMapFuncWithClusterPreservation(r.mapHubDeployment)))
	if r.Health != nil {
		// A city's verdict changing brings back every deployment of the
		// city, found through its hub copies.
		cities := make(chan event.TypedGenericEvent[*computev1alpha.WorkloadDeployment], 1024)
		r.Health.OnChange(func(city string) { go r.sendCity(hubCluster.GetCache(), city, cities) })
		b = b.WatchesRawSource(source.TypedChannel(cities,
			mchandler.TypedEnqueueRequestsFromMapFuncWithClusterPreservation(r.mapHubDeployment)))
	}
	return b.Complete(r)
}

// sendCity sends an event for every hub copy of city's deployments.
func (r *Reconciler) sendCity(hub client.Reader, city string, to chan<- event.TypedGenericEvent[*computev1alpha.WorkloadDeployment]) {
	list := &computev1alpha.WorkloadDeploymentList{}
	if err := hub.List(context.Background(), list, client.MatchingLabels{computev1alpha.CityCodeTopologyLabel: city}); err != nil {
		ctrl.Log.WithName(ControllerName).Error(err, "Failed to list the deployments of a city whose reachability changed", "city", city)
		return
	}
	for i := range list.Items {
		to <- event.TypedGenericEvent[*computev1alpha.WorkloadDeployment]{Object: &list.Items[i]}
	}
}

// specOrMetadataChanged passes creations, deletions and updates that change
// anything but the status.
func specOrMetadataChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) ||
			!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp())
	}}
}

// mapHubDeployment maps a hub copy event to its project request. Requests
// for a project cluster that is not engaged (yet, or any more) are dropped:
// the project side's own watch brings the deployment back once it is.
func (r *Reconciler) mapHubDeployment(ctx context.Context, obj *computev1alpha.WorkloadDeployment) []mcreconcile.Request {
	req, ok := RequestForHubDeployment(obj)
	if !ok {
		return nil
	}
	if _, err := r.Manager.GetCluster(ctx, req.ClusterName); err != nil {
		return nil
	}
	return []mcreconcile.Request{req}
}

// scope is one reconcile's project side.
type scope struct {
	cluster  string
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	wd       *computev1alpha.WorkloadDeployment
	// hubNamespace is the federation-plane namespace wd maps to, named
	// after its project namespace's UID (the first phase).
	hubNamespace string
	// hubNamespaceCreated is when it was made (the companions role is
	// bound there moments later: names.NotGrantedYet).
	hubNamespaceCreated time.Time
	// hubCopy is the copy in the federation plane as written.
	hubCopy *computev1alpha.WorkloadDeployment
}

// Reconcile federates one project WorkloadDeployment.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if req.ClusterName == "" {
		// The empty name is the host cluster; a request for a project
		// object must never be served there.
		log.Info("Dropping a WorkloadDeployment request without a cluster name", "workloadDeployment", req.NamespacedName)
		return ctrl.Result{}, nil
	}
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if errors.Is(err, multicluster.ErrClusterNotFound) {
		// Disengaged: nothing of it can be served now; engaging it
		// again brings its deployments back.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get project cluster %q: %w", req.ClusterName, err)
	}
	wd := &computev1alpha.WorkloadDeployment{}
	if err := cl.GetClient().Get(ctx, req.NamespacedName, wd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log = log.WithValues("cluster", req.ClusterName, "workloadDeployment", klog.KObj(wd), "uid", wd.UID)
	ctx = ctrl.LoggerInto(ctx, log)
	s := &scope{
		cluster:  req.ClusterName,
		client:   cl.GetClient(),
		reader:   cl.GetAPIReader(),
		recorder: cl.GetEventRecorder(ControllerName),
		wd:       wd,
	}

	if wd.DeletionTimestamp != nil {
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	res, err := phases.Run(ctx, s,
		phases.Phase[*scope]{Name: "read the project namespace", Run: r.readProjectNamespace},
		phases.Phase[*scope]{Name: "add the finalizer and record the federation namespace", Run: r.recordHubNamespace},
		phases.Phase[*scope]{Name: "prepare the federation namespace", Run: r.prepareHubNamespace},
		phases.Phase[*scope]{Name: "wait for the referenced data", Run: awaitReferencedData},
		phases.Phase[*scope]{Name: "record the deployment's city", Run: r.recordCity},
		phases.Phase[*scope]{Name: "federate to " + wd.Spec.CityCode, Run: r.federateToCity},
		phases.Phase[*scope]{Name: "resync a lagging status", Run: r.resyncStatus},
	)
	return r.reportFederation(ctx, s, res, err)
}

// awaitReferencedData holds the copy of a deployment whose template
// references data until the management plane has resolved it for that
// template (the annotation's change brings the deployment back): the
// copy then reaches its cell once, with what the cell must hold, instead of
// twice, and its companions travel with it.
func awaitReferencedData(_ context.Context, s *scope) (phases.Result, error) {
	if len(referenceddata.Refs(&s.wd.Spec.Template.Spec)) == 0 || referenceddata.ExpectedOf(s.wd.Annotations).For(&s.wd.Spec.Template) {
		return phases.Result{}, nil
	}
	return phases.Result{Stop: true}, nil
}

// reportFederation writes the Federated condition for what the phases did.
// A phase that stopped to wait writes nothing (the event it waits for
// brings the deployment back); a conflict is a stale read the retry
// resolves, and no news.
func (r *Reconciler) reportFederation(ctx context.Context, s *scope, res phases.Result, err error) (ctrl.Result, error) {
	var cond metav1.Condition
	switch {
	case err == nil && res.Stop:
		return res.CtrlResult(), nil
	case err == nil:
		cond = federatedCondition(s.hubNamespace)
	case apierrors.IsConflict(err):
		return ctrl.Result{}, err
	default:
		cond = failedCondition(err.Error())
	}
	return res.CtrlResult(), errors.Join(err, r.patchStatus(ctx, s, s.hubCopy, cond))
}

// readProjectNamespace reads the project namespace and derives the
// federation namespace from its UID. A deployment already federated is
// proven by its hub copy instead (see verifiedHubNamespace), which costs no
// request; any other reads the namespace from the project plane's
// apiserver, never from a cache that could still hold an earlier namespace
// of the same name.
func (r *Reconciler) readProjectNamespace(ctx context.Context, s *scope) (phases.Result, error) {
	if hubNamespace, ok := r.verifiedHubNamespace(ctx, s); ok {
		s.hubNamespace = hubNamespace
		return phases.Result{}, nil
	}
	ns := &corev1.Namespace{}
	// Read directly: the mapping must come from the namespace's UID, never
	// from anything a user can write, and a namespace deleted and made
	// again under the same name must never map to the old federation
	// namespace, which a lagging cache could still say.
	if err := s.reader.Get(ctx, client.ObjectKey{Name: s.wd.Namespace}, ns); err != nil {
		return phases.Result{}, fmt.Errorf("failed to read project namespace %s: %w", s.wd.Namespace, err)
	}
	s.hubNamespace = names.FederationNamespace(ns.UID)
	return phases.Result{}, nil
}

// verifiedHubNamespace returns the federation namespace recorded on the
// deployment when a hub copy in it proves the record: the copy belongs to
// the deployment's project namespace and carries the deployment's UID. The
// federator writes a copy only into the namespace it derived from the live
// project namespace's UID, and a deployment's UID never outlives its
// namespace, so the proof holds for the deployment's whole life whatever a
// user writes on it (the record alone is only where to look) and however
// stale the hub cache is (an older copy was proven the same way). After a
// restart this keeps every unchanged deployment off the project apiserver.
func (r *Reconciler) verifiedHubNamespace(ctx context.Context, s *scope) (string, bool) {
	recorded := s.wd.Annotations[computev1alpha.FederationNamespaceAnnotation]
	if recorded == "" || s.wd.UID == "" {
		return "", false
	}
	hubCopy := &computev1alpha.WorkloadDeployment{}
	if err := r.Hub.Get(ctx, client.ObjectKey{Namespace: recorded, Name: s.wd.Name}, hubCopy); err != nil {
		return "", false
	}
	if hubCopy.Annotations[UpstreamUIDAnnotation] != string(s.wd.UID) || !BelongsTo(hubCopy, s.cluster, s.wd.Namespace) {
		return "", false
	}
	return recorded, true
}

// federateToCity writes the city's policy and the hub copy. The policy
// comes first, so the copy is never without one; the lock keeps the policy
// controller from deleting it before the copy is there. It stops while the
// city's previous policy, or an earlier copy of the same name, is still
// being deleted.
func (r *Reconciler) federateToCity(ctx context.Context, s *scope) (phases.Result, error) {
	unlock := r.Locks.Lock(s.hubNamespace, s.wd.Spec.CityCode)
	defer unlock()
	policy, err := EnsurePolicy(ctx, r.Hub, r.HubReader, CityPolicy(s.hubNamespace, s.wd.Spec.CityCode))
	if errors.Is(err, ErrPolicyDeleting) {
		// A new policy can be made once the old one is gone.
		return phases.Result{RequeueAfter: policyWait, Stop: true}, nil
	}
	if err != nil {
		return phases.Result{}, err
	}
	desired := HubCopy(s.cluster, s.hubNamespace, s.wd)
	ClaimedBy(desired, policy)
	hubCopy, err := r.ensureHubCopy(ctx, s, desired)
	if err != nil {
		return phases.Result{}, err
	}
	if hubCopy == nil {
		// The previous copy is still being deleted; its deletion event
		// brings the deployment back.
		return phases.Result{Stop: true}, nil
	}
	s.hubCopy = hubCopy
	return phases.Result{}, nil
}

// recordHubNamespace adds the federation finalizer and stamps the hub
// namespace on the project WorkloadDeployment, in one patch, when either is
// missing. Nothing is written to the federation plane before the finalizer
// is stored, and the reconcile goes on with the patched object instead of
// waiting for the watch to bring it back. Adding the finalizer is guarded
// by the resourceVersion, so a concurrent change of the finalizer list is
// never lost (a conflict is retried).
func (r *Reconciler) recordHubNamespace(ctx context.Context, s *scope) (phases.Result, error) {
	hasFinalizer := controllerutil.ContainsFinalizer(s.wd, computev1alpha.FederationFinalizer)
	if hasFinalizer && s.wd.Annotations[computev1alpha.FederationNamespaceAnnotation] == s.hubNamespace {
		return phases.Result{}, nil
	}
	before := s.wd.DeepCopy()
	controllerutil.AddFinalizer(s.wd, computev1alpha.FederationFinalizer)
	metav1.SetMetaDataAnnotation(&s.wd.ObjectMeta, computev1alpha.FederationNamespaceAnnotation, s.hubNamespace)
	var opts []client.MergeFromOption
	if !hasFinalizer {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	err := s.client.Patch(ctx, s.wd, client.MergeFromWithOptions(before, opts...))
	if apierrors.IsNotFound(err) {
		// Gone meanwhile: nothing may be federated for it.
		return phases.Result{Stop: true}, nil
	}
	if err != nil {
		return phases.Result{}, fmt.Errorf("failed to record the finalizer and federation namespace on WorkloadDeployment %s: %w", s.wd.Name, err)
	}
	return phases.Result{}, nil
}

// prepareHubNamespace makes sure the federation namespace of the project
// namespace exists and is labelled for it.
func (r *Reconciler) prepareHubNamespace(ctx context.Context, s *scope) (phases.Result, error) {
	ns, err := r.ensureHubNamespace(ctx, hubNamespaceFor(s.cluster, s.wd.Namespace, s.hubNamespace))
	if err == nil {
		s.hubNamespaceCreated = ns.CreationTimestamp.Time
	}
	return phases.Result{}, err
}

// getOrCreate reads the hub object of create's key into existing or, when
// the hub cache has none, creates create and reports true. A create
// answered AlreadyExists (an object the cache does not hold, or not yet)
// reads the object directly. what names the object in errors.
func (r *Reconciler) getOrCreate(ctx context.Context, create, existing client.Object, what string) (bool, error) {
	key := client.ObjectKeyFromObject(create)
	err := r.Hub.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		err = r.Hub.Create(ctx, create)
		if err == nil {
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("failed to create %s in the federation plane: %w", what, err)
		}
		err = r.HubReader.Get(ctx, key, existing)
	}
	if err != nil {
		return false, fmt.Errorf("failed to read %s in the federation plane: %w", what, err)
	}
	return false, nil
}

// ensureHubNamespace creates the hub namespace, or adds the upstream labels
// to one that lacks them. A namespace labelled for another project
// namespace is never taken over.
func (r *Reconciler) ensureHubNamespace(ctx context.Context, desired *corev1.Namespace) (*corev1.Namespace, error) {
	// The cache only holds labelled namespaces: an unlabelled one answers
	// AlreadyExists to the create and is read directly.
	existing := &corev1.Namespace{}
	switch created, err := r.getOrCreate(ctx, desired, existing, "namespace "+desired.Name); {
	case err != nil:
		return nil, err
	case created:
		return desired, nil
	}
	merged := existing.DeepCopy()
	for k, v := range desired.Labels {
		cur, ok := existing.Labels[k]
		switch {
		case k == podSecurityEnforceLabel && !weakerThanBaseline(cur):
			continue // an operator's stricter level stands
		case ok && cur != v && k != podSecurityEnforceLabel:
			return nil, fmt.Errorf("namespace %s of the federation plane belongs to %s=%s, not %s", desired.Name, k, cur, v)
		}
		metav1.SetMetaDataLabel(&merged.ObjectMeta, k, v)
	}
	if equality.Semantic.DeepEqual(existing.Labels, merged.Labels) {
		return existing, nil
	}
	if err := r.Hub.Patch(ctx, merged, client.MergeFrom(existing)); err != nil {
		return nil, fmt.Errorf("failed to label namespace %s in the federation plane: %w", desired.Name, err)
	}
	return merged, nil
}

// ensureHubCopy creates the hub copy, or patches the existing one when its
// spec, labels or annotations differ from desired. It returns the copy as
// written; nil while an earlier copy is still being deleted.
func (r *Reconciler) ensureHubCopy(ctx context.Context, s *scope, desired *computev1alpha.WorkloadDeployment) (*computev1alpha.WorkloadDeployment, error) {
	// A create answered AlreadyExists is a copy made moments ago that the
	// cache has not seen yet.
	existing, created := &computev1alpha.WorkloadDeployment{}, desired.DeepCopy()
	switch ok, err := r.getOrCreate(ctx, created, existing, "the copy of WorkloadDeployment "+desired.Name); {
	case err != nil:
		return nil, err
	case ok:
		s.recorder.Eventf(s.wd, nil, corev1.EventTypeNormal, EventFederated, "Federate",
			"Copied to namespace %s of the federation plane", desired.Namespace)
		return created, nil
	}
	if !BelongsTo(existing, s.cluster, s.wd.Namespace) {
		return nil, fmt.Errorf("WorkloadDeployment %s/%s of the federation plane belongs to another project namespace (%s=%s)",
			existing.Namespace, existing.Name, computev1alpha.UpstreamClusterNameLabel, existing.Labels[computev1alpha.UpstreamClusterNameLabel])
	}
	if existing.DeletionTimestamp != nil {
		return nil, nil
	}
	merged, changed := MergeHubCopy(existing, desired)
	if !changed {
		return existing, nil
	}
	if err := r.Hub.Patch(ctx, merged, client.MergeFrom(existing)); err != nil {
		return nil, fmt.Errorf("failed to update the copy of WorkloadDeployment %s in the federation plane: %w", desired.Name, err)
	}
	return merged, nil
}

// patchStatus writes the mirrored status and the Federated condition when
// they differ from what the project WorkloadDeployment reports, and emits
// an event when federation starts failing.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, hubCopy *computev1alpha.WorkloadDeployment, cond metav1.Condition) error {
	wd := s.wd
	st := MirrorStatus(wd, hubCopy, cond, r.reachability(wd.Spec.CityCode), metav1.NewTime(r.Clock.Now()))
	prev := meta.FindStatusCondition(wd.Status.Conditions, computev1alpha.ConditionFederated).DeepCopy()
	wrote, err := patch.Status(ctx, s.client, wd, func(wd *computev1alpha.WorkloadDeployment) { wd.Status = st })
	if err != nil || !wrote {
		return err
	}
	if cond.Status == metav1.ConditionFalse && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != cond.Message) {
		s.recorder.Eventf(wd, nil, corev1.EventTypeWarning, EventFederationFailed, "Federate", "%s", truncate(cond.Message))
	}
	return nil
}

// reachability is what is known about city's cell.
func (r *Reconciler) reachability(city string) Reachability {
	if r.Health == nil {
		return Reachability{}
	}
	unreachable, lastSeen, message := r.Health.CityReachability(city)
	return Reachability{Unreachable: unreachable, LastSeen: lastSeen, Message: message}
}

// setFinalizer adds (present) or removes the federation finalizer with a
// patch guarded by the resourceVersion, so a concurrent change of the
// finalizer list is never lost.
func (r *Reconciler) setFinalizer(ctx context.Context, s *scope, present bool) error {
	before := s.wd.DeepCopy()
	if present {
		controllerutil.AddFinalizer(s.wd, computev1alpha.FederationFinalizer)
	} else {
		controllerutil.RemoveFinalizer(s.wd, computev1alpha.FederationFinalizer)
	}
	err := s.client.Patch(ctx, s.wd, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to update the finalizers of WorkloadDeployment %s: %w", s.wd.Name, err)
	}
	return nil
}
