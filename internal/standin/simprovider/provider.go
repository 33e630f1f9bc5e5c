package simprovider

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/provider/instancewrite"
	"github.com/citycells/compute/internal/referenceddata"
	"github.com/citycells/compute/internal/referenceddata/cellcompanions"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "simulated-provider"

// FieldOwner is the server-side apply field manager of everything the
// provider writes in Instance status.
const FieldOwner = "compute-simulated-provider"

// DefaultCIDR is the cell's instance address range when none is given.
const DefaultCIDR = "10.128.0.0/16"

// DefaultMaxConcurrentReconciles is the number of Instances handled at once
// unless Reconciler.MaxConcurrentReconciles says otherwise.
// Each reconcile that acts waits on API round trips (a status apply, a
// claim create, a gate patch) and costs little CPU, so throughput is set by
// how many are in flight: with 8, a thousand Instances coming up at once
// queued behind one another (the StatefulSet controller creates its Pods
// hundreds at a time). Idle workers cost nothing, and the client's QPS
// limit still bounds the rate.
const DefaultMaxConcurrentReconciles = 64

// Reconciler is the simulated runtime provider.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the cell.
	Client client.Client
	// Companions is the cache of the cell's referenced-data companions
	// (cellcompanions.NewCache): an Instance is placed only once every
	// companion its WorkloadDeployment expects is in it.
	Companions cache.Cache
	// Clock measures the delays.
	Clock clock.PassiveClock
	// Delay is how long provisioning and teardown take; zero makes both
	// immediate.
	Delay time.Duration
	// CIDR is the range network addresses come from; DefaultCIDR when
	// empty.
	CIDR string
	// ExternalCIDR is the range external addresses come from; empty means
	// instances get no external address.
	ExternalCIDR string
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// AddressesFromNetwork says the networking integration records the
	// Instances' addresses (from their NetworkBindings): the provider
	// assigns none and leaves status.networkInterfaces to it.
	AddressesFromNetwork bool

	// writes applies the provider's status and finalizer, recording them
	// in mem.
	writes *instancewrite.Writer
	// mem is what the provider remembers between reconciles (see
	// Reconcile).
	mem memory
}

// memory is everything the provider remembers between reconciles, per
// Instance; release clears what a finished teardown no longer needs and
// forget all of it when the Instance is gone.
type memory struct {
	// own recognises Instance versions the provider's own writes (status,
	// finalizer, through writes) superseded.
	own ownwrites.Tracker
	// network and external hand out the addresses; seeded is set once
	// they know the addresses the Instances already hold (see seed).
	network, external *allocator
	seedMu            sync.Mutex
	seeded            bool
	// started is when the provider started provisioning each Instance.
	startMu sync.Mutex
	started map[types.NamespacedName]provisioning
}

// provisioning remembers when the provider started on an Instance, more
// precisely than a condition's transition time.
type provisioning struct {
	uid types.UID
	at  time.Time
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/finalizers,verbs=update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch

// SetupWithManager checks the provider's settings and registers it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("simulated provider: Client is required")
	case r.Clock == nil:
		return errors.New("simulated provider: Clock is required")
	case r.Companions == nil:
		return errors.New("simulated provider: Companions is required")
	case r.Delay < 0:
		return fmt.Errorf("simulated provider: delay %s is negative", r.Delay)
	}
	if r.CIDR == "" {
		r.CIDR = DefaultCIDR
	}
	var err error
	if r.mem.network, err = newAllocator(r.CIDR); err != nil {
		return fmt.Errorf("simulated provider: %w", err)
	}
	if r.ExternalCIDR != "" {
		if r.mem.external, err = newAllocator(r.ExternalCIDR); err != nil {
			return fmt.Errorf("simulated provider: external %w", err)
		}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	r.mem.started = map[types.NamespacedName]provisioning{}
	r.writes = &instancewrite.Writer{Client: r.Client, Clock: r.Clock, FieldOwner: FieldOwner, AddressesFromNetwork: r.AddressesFromNetwork, Own: &r.mem.own}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.Instance{}).
		Watches(&computev1alpha.WorkloadDeployment{}, handler.EnqueueRequestsFromMapFunc(r.instancesOf),
			builder.WithPredicates(expectedDataChanged)).
		WatchesRawSource(source.Kind(r.Companions, cellcompanions.ConfigMap(), handler.TypedEnqueueRequestsFromMapFunc(r.unplacedNear))).
		WatchesRawSource(source.Kind(r.Companions, cellcompanions.Secret(), handler.TypedEnqueueRequestsFromMapFunc(r.unplacedNear))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile runs, fails or tears down one Instance.
//
// Between reconciles the provider remembers, per Instance (mem, cleared by
// forget when the Instance is gone):
//
//   - its own writes to the Instance (ownwrites): a version older than
//     its last write is skipped, the event of that write is on its way.
//     Lost, such a version is reconciled once more and its write repeated;
//     a restarted process's cache starts from a fresh list and holds none.
//   - the addresses it handed out. Lost on restart, they are read back
//     from the Instances' status before the first address is handed out
//     (seed), so none is handed out twice.
//   - when it started provisioning each Instance. Lost, the time is read
//     from the Instance's Programmed condition, to the second.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.writes.Dispatch(ctx, req.NamespacedName, func() { r.mem.forget(req.NamespacedName) },
		instancewrite.Stages{Run: r.run, Teardown: r.teardown, Suspend: r.suspend})
}

// run provisions an Instance that is to run: after Delay, once the
// companions its WorkloadDeployment expects are in the cell, it reports
// it Programmed and Available, with its addresses.
func (r *Reconciler) run(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	if err := r.seed(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if r.Delay > 0 && !controllerutil.ContainsFinalizer(inst, Finalizer) {
		// With no delay the teardown is immediate: there is nothing for a
		// finalizer to wait for, and no write is spent on one.
		if err := r.writes.ApplyFinalizer(ctx, inst, Finalizer, true); err != nil {
			return ctrl.Result{}, err
		}
	}

	missing, err := r.missingCompanions(ctx, inst)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	out := decide(inst, missing, now, r.mem.startedAt(inst, now), r.Delay)
	want := instancewrite.Status{Conditions: []metav1.Condition{out.programmed, out.available}, Hash: specHash(inst)}
	if out.addresses && !r.AddressesFromNetwork {
		ifaces, err := r.assign(inst)
		if err != nil {
			return ctrl.Result{}, err
		}
		want.Interfaces = ifaces
	}
	if err := r.writes.ApplyStatus(ctx, inst, want); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: max(out.requeueAfter, 0)}, nil
}

// missingCompanions returns the tokens of the companions the Instance's
// WorkloadDeployment expects (see api/v1alpha/referenceddata.go) that are
// not in the Instance's namespace, the same present set the
// ReferencedData gate decides on; none once the provider has placed the
// Instance (it keeps running), when the deployment is gone, or when it
// has not been told what to expect (the gate holds what needs data).
func (r *Reconciler) missingCompanions(ctx context.Context, inst *computev1alpha.Instance) ([]string, error) {
	if placed(inst) {
		return nil, nil
	}
	expected, found, err := cellcompanions.ExpectedFor(ctx, r.Client, inst)
	if err != nil || !found || len(expected.Tokens) == 0 {
		return nil, err
	}
	present, err := cellcompanions.Present(ctx, r.Companions, inst.Namespace)
	if err != nil {
		return nil, err
	}
	return referenceddata.Missing(expected, present), nil
}

// expectedDataChanged passes the WorkloadDeployment events that can
// change what the provider decides: a deployment that appears or goes, and
// an update that changes the companions it expects. Its status writes
// (progress, a thousand Instances' worth of them) do not bring every
// Instance back.
var expectedDataChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return referenceddata.Changed(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
	},
}

// unplacedNear maps a companion to the Instances of its namespace the
// provider has not placed, so one that waits for it is placed when it
// comes.
func (r *Reconciler) unplacedNear(ctx context.Context, companion *metav1.PartialObjectMetadata) []reconcile.Request {
	var list computev1alpha.InstanceList
	if err := r.Client.List(ctx, &list, client.InNamespace(companion.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Instances of a namespace", "namespace", klog.KRef("", companion.Namespace))
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		inst := &list.Items[i]
		if inst.DeletionTimestamp == nil && !instancewrite.Gated(inst) && !placed(inst) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: inst.Namespace, Name: inst.Name}})
		}
	}
	return out
}

// instancesOf maps a WorkloadDeployment to its Instances, so a change of
// what it expects reaches them.
func (r *Reconciler) instancesOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var list computev1alpha.InstanceList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Instances of a WorkloadDeployment", "workloadDeployment", klog.KObj(obj))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
	}
	return out
}

// teardown stops an Instance: Available turns False at once, and after the
// delay its addresses are released and the finalizer removed.
func (r *Reconciler) teardown(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(inst, Finalizer) {
		return ctrl.Result{}, nil
	}
	if left := teardownLeft(inst, r.Clock.Now(), r.Delay); left > 0 {
		want := instancewrite.Current(inst)
		want.Conditions = []metav1.Condition{
			instancewrite.ConditionOr(inst, computev1alpha.ConditionProgrammed, condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the instance is being deleted")),
			condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the simulated provider is stopping the instance"),
		}
		if err := r.writes.ApplyStatus(ctx, inst, want); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if err := r.writes.ApplyFinalizer(ctx, inst, Finalizer, false); err != nil {
		return ctrl.Result{}, err
	}
	// What the provider wrote stays tracked until the Instance is gone, so
	// the events still on their way do not tear it down twice.
	r.mem.release(client.ObjectKeyFromObject(inst))
	return ctrl.Result{}, nil
}

// suspend stops a suspended Instance at once and keeps it: Programmed and
// Available turn False with reason Suspended and its addresses are
// released (and its provisioning record, so resuming places it anew). The
// finalizer stays.
func (r *Reconciler) suspend(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	r.mem.release(client.ObjectKeyFromObject(inst))
	want := instancewrite.Status{Hash: specHash(inst), Conditions: []metav1.Condition{
		condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the simulated provider stopped the suspended instance"),
		condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the simulated provider stopped the suspended instance"),
	}}
	return ctrl.Result{}, r.writes.ApplyStatus(ctx, inst, want)
}

// seed records, once, the addresses Instances already hold, so that after
// a restart no address is handed out twice.
func (r *Reconciler) seed(ctx context.Context) error {
	r.mem.seedMu.Lock()
	defer r.mem.seedMu.Unlock()
	if r.mem.seeded {
		return nil
	}
	list := &computev1alpha.InstanceList{}
	if err := r.Client.List(ctx, list); err != nil {
		return fmt.Errorf("failed to list Instances to recover address assignments: %w", err)
	}
	for i := range list.Items {
		inst := &list.Items[i]
		for n, s := range inst.Status.NetworkInterfaces {
			r.mem.network.observe(owner(inst, n), parseAddr(s.Assignments.NetworkIP))
			if r.mem.external != nil {
				r.mem.external.observe(owner(inst, n), parseAddr(s.Assignments.ExternalIP))
			}
		}
	}
	r.mem.seeded = true
	return nil
}

// assign returns the address status of every interface of an Instance
// (one for the default network when it lists none).
func (r *Reconciler) assign(inst *computev1alpha.Instance) ([]computev1alpha.InstanceNetworkInterfaceStatus, error) {
	n := max(len(inst.Spec.NetworkInterfaces), 1)
	out := make([]computev1alpha.InstanceNetworkInterfaceStatus, n)
	for i := range n {
		var have computev1alpha.InstanceNetworkInterfaceAssignments
		if i < len(inst.Status.NetworkInterfaces) {
			have = inst.Status.NetworkInterfaces[i].Assignments
		}
		addr, err := r.mem.network.assign(owner(inst, i), parseAddr(have.NetworkIP))
		if err != nil {
			return nil, fmt.Errorf("failed to assign a network address to Instance %s: %w", inst.Name, err)
		}
		out[i].Assignments.NetworkIP = ptr.To(addr.String())
		if r.mem.external == nil {
			continue
		}
		ext, err := r.mem.external.assign(owner(inst, i), parseAddr(have.ExternalIP))
		if err != nil {
			return nil, fmt.Errorf("failed to assign an external address to Instance %s: %w", inst.Name, err)
		}
		out[i].Assignments.ExternalIP = ptr.To(ext.String())
	}
	return out, nil
}

// forget drops everything remembered of an Instance that is gone.
func (m *memory) forget(key types.NamespacedName) {
	m.release(key)
	m.own.Forget(key)
}

// release frees an Instance's addresses and provisioning record.
func (m *memory) release(key types.NamespacedName) {
	prefix := key.String() + "#"
	m.network.release(prefix)
	if m.external != nil {
		m.external.release(prefix)
	}
	m.startMu.Lock()
	delete(m.started, key)
	m.startMu.Unlock()
}

// startedAt returns when the provider started provisioning an Instance.
func (m *memory) startedAt(inst *computev1alpha.Instance, now time.Time) time.Time {
	key := client.ObjectKeyFromObject(inst)
	m.startMu.Lock()
	defer m.startMu.Unlock()
	if p, ok := m.started[key]; ok && p.uid == inst.UID {
		return p.at
	}
	at := provisioningStart(inst, now)
	m.started[key] = provisioning{uid: inst.UID, at: at}
	return at
}

// owner names one interface of an Instance for the allocators.
func owner(inst *computev1alpha.Instance, iface int) string {
	return client.ObjectKeyFromObject(inst).String() + "#" + strconv.Itoa(iface)
}

// parseAddr parses an address from status; invalid or missing gives the
// zero Addr.
func parseAddr(s *string) netip.Addr {
	if s == nil {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(*s)
	if err != nil {
		return netip.Addr{}
	}
	return a
}

// specHash returns the template hash an Instance was created from.
func specHash(inst *computev1alpha.Instance) string {
	if inst.Spec.Controller == nil {
		return ""
	}
	return inst.Spec.Controller.TemplateHash
}
