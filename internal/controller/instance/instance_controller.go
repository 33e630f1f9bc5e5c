package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/phases"
	"github.com/citycells/compute/internal/referenceddata"
	"github.com/citycells/compute/internal/referenceddata/cellcompanions"
	"github.com/citycells/compute/internal/status"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "instance"

// FieldOwner is the server-side apply field manager of the conditions this
// controller owns: Ready and QuotaGranted.
const FieldOwner = "compute-instance-controller"

// DefaultMaxConcurrentReconciles is the number of Instances reconciled at
// once unless Reconciler.MaxConcurrentReconciles says otherwise.
const DefaultMaxConcurrentReconciles = 8

// Reconciler computes the Ready, QuotaGranted and ReferencedDataReady
// conditions of the Instances in a cell and releases their Quota,
// ReferencedData and Network scheduling gates.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the cell.
	Client client.Client
	// Recorder emits events on Instances.
	Recorder events.EventRecorder
	// Clock stamps condition transitions and ages Instances for the quota
	// requeue.
	Clock clock.PassiveClock
	// Quota is the quota backend. Nil means none is configured: every
	// Instance gets QuotaGranted=True with reason QuotaDisabled and no
	// finalizer.
	Quota QuotaClient
	// NetworkingIntegration is the NetworkingIntegration feature gate. On,
	// every Instance gets a NetworkBinding per interface (it owns them),
	// its Network gate goes once they are Ready, and their addresses are
	// recorded in status.networkInterfaces; a refused binding makes Ready
	// NetworkUnavailable. Off, nothing binds networks, so a Network
	// scheduling gate left by an earlier run with the gate on is removed.
	NetworkingIntegration bool
	// Companions is the cache of the cell's referenced-data companions
	// (cellcompanions.NewCache, added to the manager): the ReferencedData gate
	// is released from what it holds, and its events bring the Instances
	// the gate holds back.
	Companions cache.Cache
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int

	// own recognises Instance versions this controller's writes superseded.
	own ownwrites.Tracker
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// SetupWithManager checks the reconciler's dependencies and registers the
// controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("instance controller: Client is required")
	case r.Recorder == nil:
		return errors.New("instance controller: Recorder is required")
	case r.Clock == nil:
		return errors.New("instance controller: Clock is required")
	case r.Companions == nil:
		return errors.New("instance controller: Companions is required")
	}
	registerMetrics()
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	claims, err := r.quotaSources(mgr)
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.Instance{}).
		// What the ReferencedData gate waits for: the companions of the
		// namespace and what the deployment expects.
		WatchesRawSource(source.Kind(r.Companions, cellcompanions.ConfigMap(), r.companionEvents())).
		WatchesRawSource(source.Kind(r.Companions, cellcompanions.Secret(), r.companionEvents())).
		Watches(&computev1alpha.WorkloadDeployment{}, handler.EnqueueRequestsFromMapFunc(r.gatedInstancesOf),
			builder.WithPredicates(referencedDataChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles})
	if r.NetworkingIntegration {
		// A binding's Ready (or refusal) brings its Instance back.
		b = b.Owns(&networkingv1alpha.NetworkBinding{})
	}
	for _, src := range claims {
		b = b.WatchesRawSource(src)
	}
	return b.Complete(r)
}

// Reconcile settles an Instance's quota decision, referenced data, Ready
// condition and gates.
//
// Between reconciles it remembers only its own writes to each Instance
// (own, forgotten when the Instance is gone): a version older than its
// last write is skipped, the event of that write is on its way. Lost on
// restart, nothing is skipped; the new process's cache starts from a fresh
// list.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	inst := &computev1alpha.Instance{}
	if err := r.Client.Get(ctx, req.NamespacedName, inst); err != nil {
		if apierrors.IsNotFound(err) {
			r.own.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.own.Stale(req.NamespacedName, inst.UID, inst.ResourceVersion) {
		// The event of this controller's last write is on its way.
		return ctrl.Result{}, nil
	}
	if inst.DeletionTimestamp != nil {
		return ctrl.Result{}, r.reconcileDelete(ctx, inst)
	}
	s := &scope{inst: inst}
	res, err := phases.Run(ctx, s,
		phases.Phase[*scope]{Name: "add the finalizer", Run: r.ensureFinalizer},
		phases.Phase[*scope]{Name: "bind the networks", Run: r.bindNetworks},
		phases.Phase[*scope]{Name: "check the referenced data", Run: r.checkReferencedData},
		phases.Phase[*scope]{Name: "report quota and readiness", Run: r.reportConditions},
		phases.Phase[*scope]{Name: "release the gates", Run: r.releaseGate},
	)
	return res.CtrlResult(), err
}

// scope is what the phases of one reconcile share.
type scope struct {
	inst *computev1alpha.Instance
	// quota is the QuotaGranted condition evaluated for inst.
	quota metav1.Condition
	// network is what inst's NetworkBindings say (NetworkingIntegration
	// on).
	network networkState
	// data is the verdict on inst's referenced data while the
	// ReferencedData gate holds it; nil otherwise.
	data *referenceddata.Verdict
}

// admission is what the gates this controller holds wait for, as one
// reconcile observed it.
type admission struct {
	// quota is the QuotaGranted condition evaluated for the Instance.
	quota metav1.Condition
	// networkReady: every NetworkBinding is Ready (always with the
	// NetworkingIntegration gate off).
	networkReady bool
	// data is the verdict on the Instance's referenced data; nil when the
	// ReferencedData gate does not hold it.
	data *referenceddata.Verdict
}

// admission returns what the gates of s's Instance wait for, quota being
// the QuotaGranted condition evaluated for it.
func (r *Reconciler) admission(s *scope, quota metav1.Condition) admission {
	return admission{quota: quota, networkReady: r.networkReady(s), data: s.data}
}

// ensureFinalizer adds the compute finalizer when quota is enforced, so the
// Instance's claim is released before it goes. The update this makes
// brings the Instance back.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (phases.Result, error) {
	if r.Quota == nil || controllerutil.ContainsFinalizer(s.inst, computev1alpha.InstanceFinalizer) {
		return phases.Result{}, nil
	}
	return phases.Result{Stop: true}, r.applyFinalizer(ctx, s.inst, true)
}

// reportConditions evaluates quota and writes QuotaGranted and Ready (for
// this generation) before anything else can fail, so their reasons are
// visible whatever happens next. A conflict while quota is not granted
// waits for the requeue the evaluation asked for, without error backoff.
func (r *Reconciler) reportConditions(ctx context.Context, s *scope) (phases.Result, error) {
	quota, requeue := r.evaluateQuota(ctx, s.inst)
	s.quota = quota
	// Ready is computed for the Instance as this reconcile leaves it: when
	// it releases gates (releaseGate, right after this write), Ready says
	// what holds the Instance once they are gone, not that they are being
	// released. Otherwise the event of the release would find Ready out of
	// date and cost a write of its own before the provider reports.
	a := r.admission(s, quota)
	released := withoutReleasedGates(s.inst, a)
	ready := withNetwork(readyCondition(released, a), s.network)
	conds := []metav1.Condition{quota, ready}
	data, hasData := referencedDataCondition(s.inst, s.data)
	if hasData {
		conds = append(conds, data)
	}
	// A verdict that changed is written at once: the gate may go in this
	// reconcile, and ReferencedDataReady is only computed while it holds.
	dataChanged := hasData && !sameAs(s.inst, data)
	if wait := r.nothingToReportYet(s.inst, quota, ready); wait > 0 && s.network.refused == "" && !dataChanged {
		// The grant or the provider's first report is moments away and
		// brings the Instance back; one write then says it all. A grant
		// that just landed goes on to release the gate: the provider's
		// report it makes possible is that moment.
		if requeue > 0 {
			wait = min(wait, requeue)
		}
		return phases.Result{RequeueAfter: wait, Stop: quota.Status != metav1.ConditionTrue}, nil
	}
	res := phases.Result{RequeueAfter: requeue}
	previous := meta.FindStatusCondition(s.inst.Status.Conditions, computev1alpha.ConditionQuotaGranted).DeepCopy()
	err := r.applyConditions(ctx, s.inst, suspendedStatus(released), conds...)
	if err == nil {
		countRefusal(previous, quota)
	}
	if apierrors.IsConflict(err) && quota.Status != metav1.ConditionTrue {
		res.Stop = true
		return res, nil
	}
	return res, err
}

// releaseGate removes the gates what reportConditions observed lets go
// (see releaseGates). A conflict means someone else
// changed the Instance while the gate is on: its update event brings it
// back, and the requeue bounds the wait without error backoff.
func (r *Reconciler) releaseGate(ctx context.Context, s *scope) (phases.Result, error) {
	err := r.releaseGates(ctx, s.inst, r.admission(s, s.quota))
	if apierrors.IsConflict(err) {
		return phases.Result{RequeueAfter: r.quotaRequeue(s.inst), Stop: true}, nil
	}
	return phases.Result{}, err
}

// reconcileDelete reports the Instance as Terminating and, when it holds
// the compute finalizer, releases its quota claim and then the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, inst *computev1alpha.Instance) error {
	// Quota is not evaluated again for an Instance that is going; its
	// condition is re-applied as it is, since leaving it out of the apply
	// would remove it.
	conds := []metav1.Condition{readyCondition(inst, admission{})}
	for _, t := range []string{computev1alpha.ConditionQuotaGranted, computev1alpha.ConditionReferencedDataReady} {
		if c := meta.FindStatusCondition(inst.Status.Conditions, t); c != nil {
			conds = append(conds, *c)
		}
	}
	if err := r.applyConditions(ctx, inst, false, conds...); err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(inst, computev1alpha.InstanceFinalizer) {
		return nil
	}
	if err := r.releaseQuota(ctx, inst); err != nil {
		return err
	}
	return r.applyFinalizer(ctx, inst, false)
}

// applyFinalizer adds (present) or removes the compute finalizer. Adding
// uses server-side apply: finalizers are a set whose entries each manager
// owns, so this never conflicts with other writers and never drops their
// finalizers. Removing uses a JSON patch that tests the entry before it
// removes it, since the finalizer may have been set when the Instance was
// created (by the WorkloadDeployment controller) and is then not this
// manager's to drop by apply.
func (r *Reconciler) applyFinalizer(ctx context.Context, inst *computev1alpha.Instance, present bool) error {
	if !present {
		return r.removeFinalizer(ctx, inst)
	}
	md := map[string]any{"name": inst.Name, "namespace": inst.Namespace, "uid": string(inst.UID)}
	md["finalizers"] = []any{computev1alpha.InstanceFinalizer}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": computev1alpha.GroupVersion.String(),
		"kind":       computev1alpha.InstanceKind,
		"metadata":   md,
	}}
	err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// With ownership forced, a conflict can only be the UID: this
		// Instance is gone (and the UID keeps apply from recreating it).
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to apply the finalizer of Instance %s: %w", inst.Name, err)
	}
	r.own.Wrote(client.ObjectKeyFromObject(inst), inst.UID, obj.GetResourceVersion())
	return nil
}

// removeFinalizer removes the compute finalizer with a JSON patch that
// first tests the Instance's UID and the entry at the index the cache
// shows: a stale cache fails the test (the error retries the reconcile)
// rather than removing someone else's finalizer.
func (r *Reconciler) removeFinalizer(ctx context.Context, inst *computev1alpha.Instance) error {
	i := slices.Index(inst.Finalizers, computev1alpha.InstanceFinalizer)
	if i < 0 {
		return nil
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": string(inst.UID)},
		{"op": "test", "path": path, "value": computev1alpha.InstanceFinalizer},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return fmt.Errorf("failed to encode the finalizer removal of Instance %s: %w", inst.Name, err)
	}
	if err := r.Client.Patch(ctx, inst, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to remove the finalizer of Instance %s: %w", inst.Name, err)
	}
	r.own.Wrote(client.ObjectKeyFromObject(inst), inst.UID, inst.ResourceVersion)
	return nil
}

// releaseGates removes the scheduling gates this controller holds:
// Quota once the QuotaGranted condition evaluated for inst (and written
// with it, or held back as nothing to report yet) admits the Instance's
// current generation, Network once the networks are ready (every
// NetworkBinding Ready and its addresses recorded; always with the
// NetworkingIntegration gate off, which binds nothing), and ReferencedData
// once every expected companion is in the cell at its version. The patch is
// guarded by the resourceVersion of the object the quota and the
// referenced data were evaluated for (or of the status write that recorded
// them), so a spec changed meanwhile is never released by a decision for
// an older one.
func (r *Reconciler) releaseGates(ctx context.Context, inst *computev1alpha.Instance, a admission) error {
	release := releasable(inst, a)
	if !anyOf(release) {
		return nil
	}
	before := inst.DeepCopy()
	kept := inst.Spec.Controller.SchedulingGates[:0:0]
	var released []string
	for _, g := range inst.Spec.Controller.SchedulingGates {
		if release[g.Name] {
			released = append(released, g.Name)
			continue
		}
		kept = append(kept, g)
	}
	inst.Spec.Controller.SchedulingGates = kept
	if err := r.Client.Patch(ctx, inst, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to remove the %s scheduling gate of Instance %s: %w", strings.Join(released, " and "), inst.Name, err)
	}
	r.own.Wrote(client.ObjectKeyFromObject(inst), inst.UID, inst.ResourceVersion)
	if release[computev1alpha.ReferencedDataSchedulingGate] {
		r.observeGateWait(inst)
	}
	if release[computev1alpha.QuotaSchedulingGate] {
		quotaWait.Observe(max(r.Clock.Since(inst.CreationTimestamp.Time), 0).Seconds())
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Released scheduling gates", "gates", released)
	return nil
}

// networkReady reports whether the Network gate may go: every
// NetworkBinding Ready with its addresses recorded, and always with the
// NetworkingIntegration gate off, which binds nothing.
func (r *Reconciler) networkReady(s *scope) bool {
	return !r.NetworkingIntegration || s.network.ready
}

// releasable returns which of the gates this controller holds may go:
// Quota once quota admits the Instance's current generation, Network once
// the networks are ready, ReferencedData once the verdict is Ready.
func releasable(inst *computev1alpha.Instance, a admission) map[string]bool {
	return map[string]bool{
		computev1alpha.QuotaSchedulingGate:          hasGate(inst, computev1alpha.QuotaSchedulingGate) && quotaAdmits(inst, a.quota),
		computev1alpha.NetworkSchedulingGate:        hasGate(inst, computev1alpha.NetworkSchedulingGate) && a.networkReady,
		computev1alpha.ReferencedDataSchedulingGate: hasGate(inst, computev1alpha.ReferencedDataSchedulingGate) && a.data != nil && a.data.Ready,
	}
}

// anyOf reports whether any gate may go.
func anyOf(release map[string]bool) bool {
	for _, ok := range release {
		if ok {
			return true
		}
	}
	return false
}

// sameAs reports whether inst already has c (type, status, reason,
// message, generation).
func sameAs(inst *computev1alpha.Instance, c metav1.Condition) bool {
	old := meta.FindStatusCondition(inst.Status.Conditions, c.Type)
	return old != nil && status.SameCondition(*old, c)
}

// withoutReleasedGates returns inst as it is once the gates releasable
// lets go are gone: inst itself when none is, otherwise a copy without
// them.
func withoutReleasedGates(inst *computev1alpha.Instance, a admission) *computev1alpha.Instance {
	release := releasable(inst, a)
	if !anyOf(release) {
		return inst
	}
	out := inst.DeepCopy()
	out.Spec.Controller.SchedulingGates = slices.DeleteFunc(out.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
		return release[g.Name]
	})
	return out
}

// applyConditions writes the conditions this controller owns and
// status.suspended, with server-side apply under FieldOwner, only when they
// changed. inst is
// updated from the response, so later steps see the new resourceVersion.
// A Warning event is emitted for each condition that starts failing for a
// new reason (see warnings).
func (r *Reconciler) applyConditions(ctx context.Context, inst *computev1alpha.Instance, suspended bool, conds ...metav1.Condition) error {
	now := metav1.NewTime(r.Clock.Now())
	merged := append([]metav1.Condition(nil), inst.Status.Conditions...)
	changed := inst.Status.Suspended != suspended
	for _, c := range conds {
		changed = status.SetCondition(&merged, c, now) || changed
	}
	if !changed {
		return nil
	}
	old := inst.Status.Conditions

	items := make([]any, 0, len(conds))
	for _, c := range conds {
		stored := meta.FindStatusCondition(merged, c.Type)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
		if err != nil {
			return fmt.Errorf("failed to encode condition %s: %w", c.Type, err)
		}
		items = append(items, u)
	}
	fields := map[string]any{"conditions": items}
	if suspended {
		// Left out when false, so the apply removes it.
		fields["suspended"] = true
	}
	if applied, err := r.applyStatusPart(ctx, inst, FieldOwner, fields, "apply status"); !applied || err != nil {
		return err
	}

	for _, w := range warnings(old, merged) {
		r.Recorder.Eventf(inst, nil, corev1.EventTypeWarning, w.Reason, "Reconcile", "%s", w.Message)
	}
	return nil
}
