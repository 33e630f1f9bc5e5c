package writeback

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/hubclients"
	"github.com/citycells/compute/internal/mirror"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/patch"
)

// ControllerName names the write-back in logs and metrics.
const ControllerName = "instance-writeback"

// DefaultMaxConcurrentReconciles is the number of Instances written back at
// once unless Reconciler.MaxConcurrentReconciles says otherwise.
const DefaultMaxConcurrentReconciles = 8

// Reconciler writes the cell's Instances back to the federation plane.
type Reconciler struct {
	// Cell reads the cell from the manager's cache.
	Cell client.Client
	// CellReader reads the cell directly: a copy is deleted only when a
	// live read shows its Instance gone.
	CellReader client.Reader
	// Hub reads the federation plane from its cache and writes to it.
	Hub client.Client
	// HubReader reads the federation plane directly: a copy is created
	// only when a live read shows its WorkloadDeployment there.
	HubReader client.Reader
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// City, when set, is the one city whose hub objects Hub's cache holds
	// (hub.ForCity, --cell-city-code): an Instance of another city cannot
	// be written back through it and fails with an error naming the flag.
	City string

	// own remembers the write-back's latest write to each copy, so a
	// reconcile on a hub cache that has not caught up with it waits for
	// its event instead of writing again (a create answered AlreadyExists,
	// a patch from a stale base).
	own ownwrites.Tracker
}

// GatedCopyHold is how long a new cell Instance still held at its
// scheduling gates waits before its copy is written: its gates normally go
// within moments (the quota grant, the referenced data), and its copy is
// then written once, ungated, instead of written and then changed (in the
// federation plane and again in its project, by the projector). One still
// gated after the hold — waiting for quota that is not there, say — is
// written as it is. The creation time it is measured from has a one-second
// resolution, so the hold is between one and two seconds.
const GatedCopyHold = 2 * time.Second

// unseenCopyWait bounds how long a copy the write-back created is waited
// for in the hub cache before it is created again (it may have gone before
// the cache saw it).
const unseenCopyWait = 15 * time.Second

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch

// SetupWithManager registers the write-back with mgr, the cell's manager.
// It watches the cell's Instances and, in hubCluster (which the caller adds
// to mgr), the copies and the hub WorkloadDeployments that own them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, hubCluster cluster.Cluster) error {
	if mgr == nil || hubCluster == nil {
		return errors.New("instance write-back: a manager and the federation plane are required")
	}
	if r.Cell == nil {
		r.Cell = mgr.GetClient()
	}
	if r.CellReader == nil {
		r.CellReader = mgr.GetAPIReader()
	}
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	registerMetrics()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.Instance{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &computev1alpha.Instance{},
			handler.TypedEnqueueRequestsFromMapFunc(r.forHubInstance))).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &computev1alpha.WorkloadDeployment{},
			handler.TypedEnqueueRequestsFromMapFunc(r.forHubDeployment))).
		Complete(r)
}

// forHubInstance maps a hub Instance to the cell Instance of the same key,
// when this cell runs its deployment.
func (r *Reconciler) forHubInstance(ctx context.Context, inst *computev1alpha.Instance) []reconcile.Request {
	if !ownedBy(inst, r.cellDeployment(ctx, inst.Namespace, inst.Labels[computev1alpha.WorkloadDeploymentNameLabel])) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(inst)}}
}

// forHubDeployment maps a hub WorkloadDeployment to the cell's Instances of
// that deployment, when this cell runs it: a copy waits for its owner.
func (r *Reconciler) forHubDeployment(ctx context.Context, wd *computev1alpha.WorkloadDeployment) []reconcile.Request {
	if r.cellDeployment(ctx, wd.Namespace, wd.Name) == nil {
		return nil
	}
	var list computev1alpha.InstanceList
	if err := r.Cell.List(ctx, &list, client.InNamespace(wd.Namespace),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: wd.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Instances of a WorkloadDeployment", "workloadDeployment", klog.KObj(wd))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// cellDeployment returns the cell's WorkloadDeployment namespace/name from
// the cache, nil when there is none.
func (r *Reconciler) cellDeployment(ctx context.Context, namespace, name string) *computev1alpha.WorkloadDeployment {
	if name == "" {
		return nil
	}
	wd := &computev1alpha.WorkloadDeployment{}
	if err := r.Cell.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, wd); err != nil {
		return nil
	}
	return wd
}

// Reconcile writes one cell Instance back, or deletes the copy of one that
// is gone.
//
// Between reconciles it remembers only its own writes to each hub copy
// (own, forgotten with the copy): a copy it created that the hub cache
// does not show yet is waited for (unseenCopyWait), a version older than
// its last write is skipped. Lost on restart, the new process's hub cache
// starts from a fresh list: at worst a create answered AlreadyExists.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	inst := &computev1alpha.Instance{}
	if err := r.Cell.Get(ctx, req.NamespacedName, inst); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.removeCopy(ctx, req.NamespacedName)
	}
	deployment := inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
	if deployment == "" {
		// The WorkloadDeployment controller stamps the label; its update
		// brings the Instance back.
		return ctrl.Result{}, nil
	}
	if city := inst.Labels[computev1alpha.CityCodeLabel]; r.City != "" && city != r.City {
		if city == "" {
			// Its copy would not be in the city's cache: wait for the
			// WorkloadDeployment controller to stamp the label; that
			// update brings the Instance back.
			return ctrl.Result{}, nil
		}
		// The hub cache holds only r.City's deployments: this Instance's
		// owner would never be seen there.
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf(
			"instance of city %q is not written back: this cell caches the federation plane of city %q only (--cell-city-code); set the flag to the city the cell serves", city, r.City))
	}
	owner := &computev1alpha.WorkloadDeployment{}
	if err := r.Hub.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: deployment}, owner); err != nil {
		// No owner in the hub (yet): nothing is written; its creation
		// brings the Instance back.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if owner.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	return r.writeBack(ctx, Copy(inst, owner), gatedHold(inst, time.Now()))
}

// gatedHold returns how long the copy of cell Instance inst, when it has
// none yet, is held back while its scheduling gates are on (GatedCopyHold):
// zero once it is ungated or old enough.
func gatedHold(inst *computev1alpha.Instance, now time.Time) time.Duration {
	if inst.Spec.Controller == nil || len(inst.Spec.Controller.SchedulingGates) == 0 || inst.DeletionTimestamp != nil {
		return 0
	}
	return max(GatedCopyHold-now.Sub(inst.CreationTimestamp.Time), 0)
}

// writeBack creates the copy desired, or updates the existing copy where
// it differs. While the hub cache has not shown the write-back's own latest
// write to the copy, it waits for that write's event (the copy's watch
// brings the Instance back) rather than decide from an older version. A
// copy that does not exist yet is not created before hold (gatedHold) is
// up or the cell Instance's change (its gates released) brings it back.
func (r *Reconciler) writeBack(ctx context.Context, desired *computev1alpha.Instance, hold time.Duration) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(desired)
	existing := &computev1alpha.Instance{}
	err := r.Hub.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		if left := r.own.Unseen(key, unseenCopyWait); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		if hold > 0 {
			return ctrl.Result{RequeueAfter: hold}, nil
		}
		return ctrl.Result{}, r.create(ctx, desired)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to read the copy of Instance %s in the federation plane: %w", desired.Name, err)
	}
	if r.own.Stale(key, existing.UID, existing.ResourceVersion) {
		return ctrl.Result{}, nil
	}
	if mirror.Replaced(existing, desired) {
		return ctrl.Result{}, r.replace(ctx, existing, desired)
	}
	return ctrl.Result{}, r.update(ctx, existing, desired)
}

// replace deletes a copy of a cell Instance the cell has since recreated
// and writes the new one, so the hub (and, after it, the project) shows a
// new Instance with its own uid and age. The UID precondition leaves a
// copy someone replaced meanwhile alone.
func (r *Reconciler) replace(ctx context.Context, existing, desired *computev1alpha.Instance) error {
	uid := existing.UID
	if err := r.Hub.Delete(ctx, existing, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("failed to replace the copy of recreated Instance %s in the federation plane: %w", desired.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Replacing the copy of a recreated Instance", "previousSourceUID", existing.Annotations[computev1alpha.SourceUIDAnnotation])
	return r.create(ctx, desired)
}

// create creates the copy once a live read shows its owner in the hub.
func (r *Reconciler) create(ctx context.Context, desired *computev1alpha.Instance) error {
	owner := &computev1alpha.WorkloadDeployment{}
	ref := desired.OwnerReferences[0]
	if err := r.HubReader.Get(ctx, types.NamespacedName{Namespace: desired.Namespace, Name: ref.Name}, owner); err != nil {
		return client.IgnoreNotFound(err)
	}
	if owner.UID != ref.UID || owner.DeletionTimestamp != nil {
		return nil
	}
	created := desired.DeepCopy()
	created.Status = computev1alpha.InstanceStatus{}
	err := r.Hub.Create(ctx, created)
	if apierrors.IsAlreadyExists(err) {
		// The cache has not seen a copy made moments ago, or the replaced
		// copy is still being deleted: the next event settles it.
		existing := &computev1alpha.Instance{}
		if err := r.HubReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
			return fmt.Errorf("failed to read the copy of Instance %s in the federation plane: %w", desired.Name, err)
		}
		if mirror.Replaced(existing, desired) {
			return fmt.Errorf("the previous copy of Instance %s is still being deleted from the federation plane", desired.Name)
		}
		return r.update(ctx, existing, desired)
	}
	if err != nil {
		return fmt.Errorf("failed to create the copy of Instance %s in the federation plane: %w", desired.Name, err)
	}
	r.own.Wrote(client.ObjectKeyFromObject(created), created.UID, created.ResourceVersion)
	ctrl.LoggerFrom(ctx).V(1).Info("Wrote the Instance back to the federation plane")
	return r.patchStatus(ctx, created, desired.Status)
}

// update patches the copy's metadata and spec, then its status, each only
// when it differs from desired.
func (r *Reconciler) update(ctx context.Context, existing, desired *computev1alpha.Instance) error {
	if merged, changed := mirror.MergeInstance(existing, desired); changed {
		if err := r.Hub.Patch(ctx, merged, client.MergeFrom(existing)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("failed to update the copy of Instance %s in the federation plane: %w", desired.Name, err)
		}
		r.own.Wrote(client.ObjectKeyFromObject(merged), merged.UID, merged.ResourceVersion)
		existing = merged
	}
	return r.patchStatus(ctx, existing, desired.Status)
}

// patchStatus writes status onto hubCopy when it differs.
func (r *Reconciler) patchStatus(ctx context.Context, hubCopy *computev1alpha.Instance, status computev1alpha.InstanceStatus) error {
	previous := hubCopy.Status.Conditions
	wrote, err := patch.Status(ctx, r.Hub, hubCopy, func(i *computev1alpha.Instance) { i.Status = *status.DeepCopy() })
	if wrote && err == nil {
		r.own.Wrote(client.ObjectKeyFromObject(hubCopy), hubCopy.UID, hubCopy.ResourceVersion)
		observeLag(previous, status.Conditions, time.Now())
	}
	return err
}

// removeCopy deletes the hub copy of a cell Instance that is gone, when
// this cell runs the copy's deployment and a live read confirms the
// Instance is gone (the cache may not have seen it yet).
func (r *Reconciler) removeCopy(ctx context.Context, key types.NamespacedName) error {
	existing := &computev1alpha.Instance{}
	if err := r.Hub.Get(ctx, key, existing); err != nil {
		if apierrors.IsNotFound(err) {
			r.own.Forget(key)
		}
		return client.IgnoreNotFound(err)
	}
	if !ownedBy(existing, r.cellDeployment(ctx, key.Namespace, existing.Labels[computev1alpha.WorkloadDeploymentNameLabel])) {
		return nil
	}
	err := r.CellReader.Get(ctx, key, &computev1alpha.Instance{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.Hub.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			// Replaced by a newer copy meanwhile: that one is current.
			return nil
		}
		return fmt.Errorf("failed to delete the copy of Instance %s in the federation plane: %w", key.Name, err)
	}
	r.own.Forget(key)
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted the copy of an Instance that is gone from the federation plane", "instance", key)
	return nil
}
