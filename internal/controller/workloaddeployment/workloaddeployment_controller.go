package workloaddeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/pendingfirst"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "workloaddeployment"

// InstanceOwnerIndex is the field index of Instances by the UID of their
// controlling owner. Instances are found through it rather than through
// labels, so Instances whose labels are missing are still found (and
// back-filled).
const InstanceOwnerIndex = ".metadata.controllerUID"

// DefaultMaxConcurrentReconciles is the number of WorkloadDeployments
// reconciled at once unless Reconciler.MaxConcurrentReconciles says
// otherwise.
const DefaultMaxConcurrentReconciles = 4

// Reconciler keeps one Instance per desired replica of each
// WorkloadDeployment in the cell and reports them in its status.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the cell.
	Client client.Client
	// Recorder emits events on WorkloadDeployments.
	Recorder events.EventRecorder
	// Clock stamps condition transitions.
	Clock clock.PassiveClock
	// SchedulingGates are put, in this order, on every new Instance:
	// Quota, plus Network with the NetworkingIntegration feature gate.
	// ReferencedData follows them on the Instances of a template that
	// reads ConfigMaps or Secrets.
	SchedulingGates []string
	// Location is the Location the cell serves: set as spec.location of
	// every new Instance and as status.location; nil leaves both unset.
	Location *computev1alpha.LocationReference
	// Finalizers are put on every new Instance: the compute finalizer when
	// a quota backend is configured, so the Instance controller need not
	// add it with a write of its own before the first claim.
	Finalizers []string
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int

	// mem is what the reconciler remembers between reconciles (see
	// Reconcile).
	mem memory
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch

// SetupWithManager checks the reconciler's dependencies, indexes Instances
// by owner and registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("workloaddeployment controller: Client is required")
	case r.Recorder == nil:
		return errors.New("workloaddeployment controller: Recorder is required")
	case r.Clock == nil:
		return errors.New("workloaddeployment controller: Clock is required")
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	registerMetrics()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &computev1alpha.Instance{}, InstanceOwnerIndex, ownerUID); err != nil {
		return fmt.Errorf("failed to index Instances by owner: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.WorkloadDeployment{}).
		// After a restart, a deployment changed while the manager was
		// away goes before the settled ones its list brings.
		Watches(&computev1alpha.WorkloadDeployment{}, pendingfirst.Handler()).
		// Like Owns, events of the initial list and resyncs go behind
		// the ones that change something (the priority queue).
		Watches(&computev1alpha.Instance{}, handler.WithLowPriorityWhenUnchanged(handler.EventHandler(instanceEvents{sizes: &r.mem.sizes}))).
		// An autoscaling deployment's count depends on whether its own
		// HorizontalPodAutoscaler exists (workloaddeployment_autoscaling.go).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, hpaHandler, builder.WithPredicates(hpaCreatedOrDeleted)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// ownerUID indexes an Instance by the UID of its controlling
// WorkloadDeployment.
func ownerUID(obj client.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != computev1alpha.WorkloadDeploymentKind || ref.APIVersion != computev1alpha.GroupVersion.String() {
		return nil
	}
	return []string{string(ref.UID)}
}

// scope is what one reconcile observed.
type scope struct {
	wd        *computev1alpha.WorkloadDeployment
	instances []computev1alpha.Instance
	input     instanceplan.Input
	// statusHeld is how long the status write was held back (pace).
	statusHeld time.Duration
}

// Reconcile moves a WorkloadDeployment's Instances one step towards the
// desired state and reports what it observed.
//
// Between reconciles the reconciler remembers, per WorkloadDeployment (mem,
// cleared by forget when the deployment goes):
//
//   - expectations: the Instances it created or deleted that the cache does
//     not show yet, so a reconcile that runs before the cache catches up
//     neither creates them again nor takes one more Instance down than the
//     rollout allows. Lost on restart, the new process reads a cache that
//     is synced from the start: at worst a create answered AlreadyExists.
//   - its own status writes (ownwrites): a version older than its last
//     status patch is skipped, the event of that patch is on its way.
//     Lost, such a version is reconciled and its status written once more;
//     a restarted process's cache starts from a fresh list and holds none.
//   - the pace: since when a progress-only status change is held back.
//     Lost, the change is held for one more StatusInterval at most.
//   - the sizes: how many Instances the last reconcile read, which sets the
//     window Instance events are coalesced in. Lost, the first events after
//     a restart bring the deployment back at once.
//
// Each saves writes or reconciles (the benchmarks count them); the
// decisions themselves come from what the cache and the API server show.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wd := &computev1alpha.WorkloadDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, wd); err != nil {
		if apierrors.IsNotFound(err) {
			r.mem.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wd.DeletionTimestamp.IsZero() {
		// The garbage collector removes the Instances with their owner.
		r.mem.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if r.mem.own.Stale(req.NamespacedName, wd.UID, wd.ResourceVersion) {
		// The event of this controller's last status patch is on its way.
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("city", wd.Spec.CityCode, "workload", wd.Spec.WorkloadRef.Name)
	ctx = ctrl.LoggerInto(ctx, log)

	s, err := r.observe(ctx, wd)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := instanceplan.Compute(r.mem.expect.apply(wd, s.input, s.instances, r.Clock.Now()))
	if len(plan.Intents) > 0 || plan.Waiting != "" {
		log.V(1).Info("Planned instance control", "intents", plan.Lines())
	}
	applyErr := r.apply(ctx, s, plan)
	held := errors.Is(applyErr, errNameHeld)
	if held {
		applyErr = nil
	}
	// Status is computed from what the cache shows, without expectations.
	statusErr := r.patchStatus(ctx, s, instanceplan.Assess(s.input), applyErr == nil && !held)
	if err := errors.Join(applyErr, statusErr); err != nil {
		return ctrl.Result{}, err
	}
	// A status held back by the pace is written when its interval is up.
	return r.wakeUp(wd, held, s.statusHeld), nil
}

// nameHeldWait is how long a deployment waits before trying again to
// create an Instance whose name a predecessor's Instance still holds.
const nameHeldWait = 5 * time.Second

// wakeUp says when to look again without an event: expectations lapse by
// time, not by an event, so a reconcile must come when the first one
// expires — otherwise a create that never shows (its name taken by another
// owner's Instance, a lost event) leaves the deployment waiting forever.
func (r *Reconciler) wakeUp(wd *computev1alpha.WorkloadDeployment, held bool, statusHeld time.Duration) ctrl.Result {
	after := statusHeld
	if d, ok := r.mem.expect.nextExpiry(wd, r.Clock.Now()); ok && (after == 0 || d < after) {
		after = d
	}
	if held && (after == 0 || nameHeldWait < after) {
		after = nameHeldWait
	}
	return ctrl.Result{RequeueAfter: after}
}

// observe reads the Instances wd owns and turns them into planner input.
func (r *Reconciler) observe(ctx context.Context, wd *computev1alpha.WorkloadDeployment) (*scope, error) {
	list := &computev1alpha.InstanceList{}
	// Read-only use: the Instances are never changed in place (writes take
	// copies), so the cache's objects need not be copied, which matters
	// when a deployment has a thousand of them and every one of their
	// changes brings it back here.
	if err := r.Client.List(ctx, list, client.InNamespace(wd.Namespace), client.MatchingFields{InstanceOwnerIndex: string(wd.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("failed to list Instances of WorkloadDeployment %s: %w", wd.Name, err)
	}
	r.mem.sizes.observed(client.ObjectKeyFromObject(wd), len(list.Items))
	replicas, err := r.replicasFor(ctx, wd)
	if err != nil {
		return nil, err
	}
	return newScope(wd, list.Items, replicas), nil
}

// newScope turns the Instances wd owns (items, which it may change: see
// currentHashes) into planner input for replicas.
func newScope(wd *computev1alpha.WorkloadDeployment, items []computev1alpha.Instance, replicas int32) *scope {
	hashes := names.HashesOf(&wd.Spec.Template)
	currentHashes(items, hashes)
	s := &scope{
		wd:        wd,
		instances: items,
		input: instanceplan.Input{
			Deployment:     wd.Name,
			Replicas:       replicas,
			Policy:         wd.Spec.ScaleSettings.InstanceManagementPolicy,
			MaxUnavailable: maxUnavailable(wd),
			TemplateHash:   hashes.Current,
			Labels:         linkingLabels(wd),
			Instances:      make([]instanceplan.Instance, 0, len(items)),
		},
	}
	for i := range items {
		inst := &items[i]
		s.input.Instances = append(s.input.Instances, instanceplan.Instance{
			Name:         inst.Name,
			Labels:       inst.Labels,
			TemplateHash: specHash(inst),
			Ready:        isReady(inst),
			Deleting:     isDeleting(inst),
		})
	}
	return s
}

// linkingLabels returns the labels of SPEC section 2 every Instance of wd
// carries, except instance-index, which the planner adds per slot. The
// Workload identity comes from the spec (immutable), the deployment's from
// the deployment itself.
func linkingLabels(wd *computev1alpha.WorkloadDeployment) map[string]string {
	return map[string]string{
		computev1alpha.WorkloadUIDLabel:            string(wd.Spec.WorkloadRef.UID),
		computev1alpha.WorkloadNameLabel:           wd.Spec.WorkloadRef.Name,
		computev1alpha.WorkloadDeploymentUIDLabel:  string(wd.UID),
		computev1alpha.WorkloadDeploymentNameLabel: wd.Name,
		computev1alpha.CityCodeLabel:               wd.Spec.CityCode,
		computev1alpha.PlacementNameLabel:          wd.Spec.PlacementName,
	}
}

// locationOf is the Location wd runs in: its spec.locationRef, else the
// cell's own Location (deployments from before placement by Location).
func (r *Reconciler) locationOf(wd *computev1alpha.WorkloadDeployment) *computev1alpha.LocationReference {
	if wd.Spec.LocationRef != nil {
		return wd.Spec.LocationRef.DeepCopy()
	}
	return r.Location.DeepCopy()
}

// patchStatus writes the status computed from what was observed, only when
// it changed. ObservedGeneration advances only when the reconcile
// succeeded.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, a instanceplan.Assessment, succeeded bool) error {
	now := metav1.NewTime(r.Clock.Now())
	st := computeStatus(s.wd, s.instances, a, now)
	st.Location = r.locationOf(s.wd)
	if succeeded {
		st.ObservedGeneration = s.wd.Generation
	}
	key := client.ObjectKeyFromObject(s.wd)
	if equality.Semantic.DeepEqual(s.wd.Status, st) {
		// Nothing to write, and nothing held: a change held back and
		// undone meanwhile is never written.
		r.mem.pace.settled(key)
		return nil
	}
	if s.statusHeld = r.mem.pace.hold(key, &s.wd.Status, &st, now.Time); s.statusHeld > 0 {
		return nil
	}
	was, wasHash := s.wd.Status.Suspended, s.wd.Status.TemplateHash
	wrote, err := patch.Status(ctx, r.Client, s.wd, func(wd *computev1alpha.WorkloadDeployment) { wd.Status = st })
	if err != nil {
		return err
	}
	if wrote {
		r.suspensionEvent(s.wd, was, st.Suspended, int(st.Replicas))
		observeToCellLag(s.wd, wasHash, st.TemplateHash, now.Time)
	}
	r.mem.pace.settled(key)
	if wrote {
		r.mem.own.Wrote(key, s.wd.UID, s.wd.ResourceVersion)
	}
	return nil
}
