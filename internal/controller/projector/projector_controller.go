package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/hubclients"
	"github.com/citycells/compute/internal/mirror"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/patch"
)

// ControllerName names the projector in logs, metrics and events.
const ControllerName = "instance-projector"

// DefaultMaxConcurrentReconciles is the number of hub Instances projected
// at once unless Reconciler.MaxConcurrentReconciles says otherwise.
const DefaultMaxConcurrentReconciles = 8

// EventProjectionUnresolvable is the reason of the Warning event on a hub
// Instance that cannot be projected.
const EventProjectionUnresolvable = "ProjectionUnresolvable"

// clusterRetryAfter is how long to wait before trying again to project into
// a project cluster that is not engaged.
const clusterRetryAfter = 30 * time.Second

// Reconciler is the InstanceProjector.
type Reconciler struct {
	// Manager resolves project clusters by name.
	Manager mcmanager.Manager
	// Hub reads the federation plane from its cache.
	Hub client.Client
	// HubReader reads the federation plane directly: a namespace the cache
	// does not hold yet is read before an Instance in it is declared
	// unresolvable.
	HubReader client.Reader
	// Recorder emits events on hub Instances.
	Recorder events.EventRecorder
	// Clock ages hub Instances and measures projection lag; the real clock
	// when nil.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int

	// own remembers the projections the projector created (keyed by
	// ownKey), so that a reconcile that does not find one in the project
	// cluster's cache yet waits for the cache instead of creating it again.
	own ownwrites.Tracker
}

// Waiting for a projection the projector created to show in its cache: it
// looks again every unseenProjectionPoll (the projector does not watch its
// projections, so no event brings the hub Instance back; the cache
// normally shows the create within milliseconds), and creates it again
// after unseenProjectionWait (it may have gone before the cache saw it).
const (
	unseenProjectionPoll = 100 * time.Millisecond
	unseenProjectionWait = 5 * time.Second
)

// ownKey keys a projection of project cluster cluster in the own-writes
// tracker: project clusters may share namespace names.
func ownKey(cluster string, obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: cluster + "/" + obj.GetNamespace(), Name: obj.GetName()}
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the projector on mgr's local manager: its
// requests are hub Instances, from hubCluster (which the caller adds to
// mgr); the projections go to mgr's project clusters.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager, hubCluster cluster.Cluster) error {
	switch {
	case mgr == nil:
		return errors.New("instance projector: a manager is required")
	case hubCluster == nil:
		return errors.New("instance projector: the federation plane is required (--federation-kubeconfig)")
	}
	r.Manager = mgr
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.Recorder == nil {
		r.Recorder = hubCluster.GetEventRecorder("compute.datumapis.com/" + ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	registerMetrics()
	if err := r.setupRestorer(mgr, hubCluster); err != nil {
		return err
	}
	if err := (&EventReconciler{Clock: r.Clock}).SetupWithManager(mgr, hubCluster); err != nil {
		return fmt.Errorf("failed to set up the event projector: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr.GetLocalManager()).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &computev1alpha.Instance{},
			&handler.TypedEnqueueRequestForObject[*computev1alpha.Instance]{})).
		// A namespace that starts naming its project makes its Instances
		// resolvable.
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &corev1.Namespace{},
			handler.TypedEnqueueRequestsFromMapFunc(r.instancesIn))).
		Complete(r)
}

// instancesIn maps a hub namespace to the hub Instances in it.
func (r *Reconciler) instancesIn(ctx context.Context, ns *corev1.Namespace) []reconcile.Request {
	var list computev1alpha.InstanceList
	// Only the keys are read: no copies of the namespace's Instances.
	if err := r.Hub.List(ctx, &list, client.InNamespace(ns.Name), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Instances of a namespace of the federation plane", "namespace", ns.Name)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile projects one hub Instance.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	inst := &computev1alpha.Instance{}
	if err := r.Hub.Get(ctx, req.NamespacedName, inst); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone from the hub: the cell removed the Instance (scale-down,
		// replacement). Its projection goes too, guarded (removeGhost).
		return ctrl.Result{}, r.removeGhost(ctx, req.NamespacedName)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("hubInstance", klog.KObj(inst))
	ctx = ctrl.LoggerInto(ctx, log)

	ns, err := r.hubNamespace(ctx, inst.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	id, reason, message := resolve(inst, ns)
	if reason != "" {
		r.unresolvable(inst, reason, message)
		return ctrl.Result{}, nil
	}
	log = log.WithValues("cluster", id.cluster, "namespace", id.namespace, "workloadDeployment", id.deployment)
	ctx = ctrl.LoggerInto(ctx, log)

	cl, err := r.Manager.GetCluster(ctx, id.cluster)
	if err != nil {
		r.unresolvable(inst, ReasonClusterNotEngaged, fmt.Sprintf("project cluster %q is not engaged: %v", id.cluster, err))
		return ctrl.Result{RequeueAfter: clusterRetryAfter}, nil
	}
	owner := &computev1alpha.WorkloadDeployment{}
	if err := cl.GetClient().Get(ctx, client.ObjectKey{Namespace: id.namespace, Name: id.deployment}, owner); err != nil {
		if apierrors.IsNotFound(err) {
			// Never project without the owner: wait for it.
			wait := ownerWaitAfter(r.Clock.Since(inst.CreationTimestamp.Time))
			log.V(1).Info("Waiting for the project WorkloadDeployment before projecting", "after", wait)
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		return ctrl.Result{}, fmt.Errorf("failed to read WorkloadDeployment %s/%s: %w", id.namespace, id.deployment, err)
	}
	if owner.DeletionTimestamp != nil {
		// Its projections go with it.
		return ctrl.Result{}, nil
	}
	if city := inst.Labels[computev1alpha.CityCodeLabel]; city != owner.Spec.CityCode {
		// Written back by a cell of another city than its owner's: a cell
		// claiming another city's deployment (#38). Never projected.
		r.unresolvable(inst, ReasonCityMismatch, fmt.Sprintf(
			"Instance %s/%s was written back as city %q, but its WorkloadDeployment %s/%s of project cluster %q is of city %s: not projected",
			inst.Namespace, inst.Name, city, id.namespace, id.deployment, id.cluster, owner.Spec.CityCode))
		return ctrl.Result{}, nil
	}
	if hubNS := owner.Annotations[computev1alpha.FederationNamespaceAnnotation]; hubNS != "" && hubNS != inst.Namespace {
		r.unresolvable(inst, ReasonDeploymentMismatch, fmt.Sprintf(
			"WorkloadDeployment %s/%s of project cluster %q is federated to namespace %s, not %s",
			id.namespace, id.deployment, id.cluster, hubNS, inst.Namespace))
		return ctrl.Result{}, nil
	}
	return r.project(ctx, id.cluster, cl, inst, Projection(inst, id.namespace, owner))
}

// hubNamespace returns the hub namespace name, nil when it does not exist.
// The cache holds only the namespaces compute maps; one it does not hold
// (not mapped, or not seen yet) is read directly.
func (r *Reconciler) hubNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := r.Hub.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		err = r.HubReader.Get(ctx, client.ObjectKey{Name: name}, ns)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read namespace %s of the federation plane: %w", name, err)
	}
	return ns, nil
}

// project creates or updates the projection desired of hub Instance inst
// in project cluster cl (named clusterName). A projection it created that
// the cache does not show yet is waited for, not created again.
func (r *Reconciler) project(ctx context.Context, clusterName string, cl cluster.Cluster, inst, desired *computev1alpha.Instance) (ctrl.Result, error) {
	c := cl.GetClient()
	key := ownKey(clusterName, desired)
	existing := &computev1alpha.Instance{}
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if err == nil {
		r.own.Forget(key) // seen
	}
	if apierrors.IsNotFound(err) {
		if left := r.own.Unseen(key, unseenProjectionWait); left > 0 {
			return ctrl.Result{RequeueAfter: min(left, unseenProjectionPoll)}, nil
		}
		created := desired.DeepCopy()
		created.Status = computev1alpha.InstanceStatus{}
		err = c.Create(ctx, created)
		if err == nil {
			r.own.Wrote(key, created.UID, created.ResourceVersion)
			return ctrl.Result{}, r.patchStatus(ctx, c, created, desired.Status)
		}
		if !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("failed to create projection %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		// The cache has not seen a projection made moments ago.
		err = cl.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(desired), existing)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to read projection %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if !isProjection(existing) {
		r.unresolvable(inst, ReasonNameTaken, fmt.Sprintf(
			"Instance %s/%s in the project is not a projection; it is left alone", desired.Namespace, desired.Name))
		return ctrl.Result{}, nil
	}
	if mirror.Replaced(existing, desired) {
		// The cell recreated the Instance: the project shows a new one,
		// with its own uid and age, not the old one updated.
		return ctrl.Result{}, r.replace(ctx, key, cl, existing, desired)
	}
	if merged, changed := mirror.MergeInstance(existing, desired); changed {
		if err := c.Patch(ctx, merged, client.MergeFrom(existing)); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("failed to update projection %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		existing = merged
	}
	return ctrl.Result{}, r.patchStatus(ctx, c, existing, desired.Status)
}

// replace deletes a projection of a cell Instance that was since recreated
// and projects the new one. The UID precondition leaves a projection
// replaced meanwhile alone; a create that finds the old one still there
// fails and is retried.
func (r *Reconciler) replace(ctx context.Context, key types.NamespacedName, cl cluster.Cluster, existing, desired *computev1alpha.Instance) error {
	c := cl.GetClient()
	uid := existing.UID
	if err := c.Delete(ctx, existing, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("failed to replace projection %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	created := desired.DeepCopy()
	created.Status = computev1alpha.InstanceStatus{}
	if err := c.Create(ctx, created); err != nil {
		return fmt.Errorf("failed to create the projection of recreated Instance %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	r.own.Wrote(key, created.UID, created.ResourceVersion)
	ctrl.LoggerFrom(ctx).V(1).Info("Replaced the projection of a recreated Instance", "projection", klog.KObj(created))
	return r.patchStatus(ctx, c, created, desired.Status)
}

// removeGhost deletes the projection of a hub Instance that is gone, so the
// project never lists Instances that no longer run. Guarded: only a
// projection, only when a live read confirms the hub Instance is gone
// (a partitioned cell removes nothing: its write-backs stay in the hub),
// and only while its owner, the project WorkloadDeployment, exists and
// federates to that hub namespace — without the owner the garbage
// collector removes it anyway.
func (r *Reconciler) removeGhost(ctx context.Context, key client.ObjectKey) error {
	ns, err := r.hubNamespace(ctx, key.Namespace)
	if err != nil || ns == nil {
		return err
	}
	cluster, ok := names.ClusterFromUpstreamName(ns.Labels[computev1alpha.UpstreamClusterNameLabel])
	namespace := ns.Labels[computev1alpha.UpstreamNamespaceLabel]
	if !ok || namespace == "" {
		return nil
	}
	cl, err := r.Manager.GetCluster(ctx, cluster)
	if err != nil {
		return nil //nolint:nilerr // a cluster that is not engaged has nothing of ours to remove
	}
	c := cl.GetClient()
	proj := &computev1alpha.Instance{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: key.Name}, proj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !isProjection(proj) || proj.DeletionTimestamp != nil {
		return nil
	}
	ref := metav1.GetControllerOf(proj)
	if ref == nil || ref.Kind != computev1alpha.WorkloadDeploymentKind {
		return nil
	}
	owner := &computev1alpha.WorkloadDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, owner); err != nil {
		return client.IgnoreNotFound(err)
	}
	if owner.UID != ref.UID || owner.DeletionTimestamp != nil ||
		(owner.Annotations[computev1alpha.FederationNamespaceAnnotation] != "" && owner.Annotations[computev1alpha.FederationNamespaceAnnotation] != key.Namespace) {
		return nil
	}
	err = r.HubReader.Get(ctx, key, &computev1alpha.Instance{})
	if err == nil {
		return nil // the cache was behind: the hub Instance is there
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to confirm hub Instance %s is gone: %w", key, err)
	}
	uid := proj.UID
	if err := c.Delete(ctx, proj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete projection %s/%s of a gone Instance: %w", namespace, key.Name, err)
	}
	r.own.Forget(ownKey(cluster, proj))
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted the projection of an Instance that is gone", "projection", klog.KObj(proj))
	return nil
}

// patchStatus writes status onto projection proj when it differs.
func (r *Reconciler) patchStatus(ctx context.Context, c client.Client, proj *computev1alpha.Instance, status computev1alpha.InstanceStatus) error {
	previous := latestTransition(proj.Status.Conditions)
	wrote, err := patch.Status(ctx, c, proj, func(p *computev1alpha.Instance) { p.Status = *status.DeepCopy() })
	if err != nil || !wrote {
		return err
	}
	if newest := latestTransition(status.Conditions); newest.After(previous.Time) {
		lag.Observe(r.Clock.Since(newest.Time).Seconds())
	}
	return nil
}

// latestTransition returns the latest transition time of conds.
func latestTransition(conds []metav1.Condition) metav1.Time {
	var t metav1.Time
	for _, c := range conds {
		if c.LastTransitionTime.After(t.Time) {
			t = c.LastTransitionTime
		}
	}
	return t
}

// unresolvable reports a hub Instance that cannot be projected.
func (r *Reconciler) unresolvable(inst *computev1alpha.Instance, reason, message string) {
	unresolvable.WithLabelValues(reason).Inc()
	r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, EventProjectionUnresolvable, "Project", "%s: %s", reason, message)
}
