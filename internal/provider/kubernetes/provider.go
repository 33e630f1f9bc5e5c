package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/ownwrites"
	"github.com/citycells/compute/internal/provider/instancewrite"
	"github.com/citycells/compute/internal/quota/sizing"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "kubernetes-provider"

// FieldOwner is the server-side apply field manager of everything the
// provider writes on Instances (its finalizer and its status fields).
const FieldOwner = "compute-kubernetes-provider"

// Finalizer gates the deletion of every Instance the provider runs until
// its Pod is gone.
const Finalizer = "compute.datumapis.com/kubernetes-provider"

// DefaultRecheckAfter is how soon an Instance whose ConfigMaps or Secrets
// are missing in the cell is looked at again: the provider does not watch
// them (a cluster-wide watch of every Secret is more than it needs).
const DefaultRecheckAfter = 10 * time.Second

// grantRetry is how soon a Pod the cell refused within names.GrantGrace of
// its Instance's creation is tried again: the namespace's grant is usually
// moments away.
const grantRetry = 500 * time.Millisecond

// DefaultMaxConcurrentReconciles is the number of Instances handled at once
// unless Reconciler.MaxConcurrentReconciles says otherwise: each reconcile
// that acts waits on API round trips and costs little CPU.
const DefaultMaxConcurrentReconciles = 32

// createdTTL bounds the wait for a Pod the provider created to show in
// its cache; past it the provider looks again as if it had created none.
const createdTTL = 10 * time.Second

// CacheByObject returns the manager cache options the provider needs: Pods
// and NetworkPolicies cached only when they carry InstanceLabel, so the
// cell's other Pods (kube-system, the manager's own) and policies are
// never held in memory. Merge it into the manager's cache.Options.ByObject.
func CacheByObject() map[client.Object]cache.ByObject {
	req, err := labels.NewRequirement(InstanceLabel, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("the selector of %s does not parse: %v", InstanceLabel, err)) // a constant: never happens
	}
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                 {Label: labels.NewSelector().Add(*req)},
		&networkingv1.NetworkPolicy{}: {Label: labels.NewSelector().Add(*req)},
	}
}

// Reconciler is the Kubernetes runtime provider: it runs each Instance of
// the cell as a Pod in the cell's own API.
type Reconciler struct {
	// Client reads Instances and Pods from the manager's cache (Pods
	// restricted by CacheByObject) and writes to the cell.
	Client client.Client
	// APIReader reads, uncached, the ConfigMaps and Secrets a Pod needs
	// (their metadata only) and a Pod the cache does not hold.
	APIReader client.Reader
	// Clock stamps conditions.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles defaults to DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// AddressesFromNetwork says the networking integration records the
	// Instances' addresses: the provider writes none.
	AddressesFromNetwork bool
	// RecheckAfter defaults to DefaultRecheckAfter.
	RecheckAfter time.Duration
	// AllocationRatio overcommits the cell's nodes: a container's limits
	// are its share of the instance's size and its requests that divided
	// by the ratio, so the scheduler places ratio times more instances
	// than the nodes hold. 1 (and zero, the default) makes requests equal
	// limits: Guaranteed Pods, an instance gets what its type says. It
	// applies to the Pods created from then on.
	AllocationRatio float64
	// NetworkPolicyEnforcement says whether the cell enforces the
	// NetworkPolicies the provider writes (one per Instance, see
	// networkPolicyFor); empty means EnforcementNone. The provider cannot
	// tell: with none, an Instance that declares a policy reports
	// Programmed False, reason NetworkPolicyNotEnforced.
	NetworkPolicyEnforcement NetworkPolicyEnforcement

	// writes applies the provider's status and finalizer, recording them
	// in mem.
	writes *instancewrite.Writer
	// mem is what the provider remembers between reconciles (see
	// Reconcile).
	mem memory
}

// memory is everything the provider remembers between reconciles, per
// Instance; forget clears it when the Instance is gone.
type memory struct {
	// own recognises Instance versions the provider's own writes (status,
	// finalizer, through writes) superseded.
	own ownwrites.Tracker
	// created remembers the Pods the provider created until its cache
	// shows them, so it does not create them twice.
	created ownwrites.Tracker
}

// forget drops everything remembered of an Instance that is gone.
func (m *memory) forget(key types.NamespacedName) {
	m.own.Forget(key)
	m.created.Forget(key)
}

// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instances/finalizers,verbs=update
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=instancetypes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager checks the provider's settings and registers it. The
// manager's scheme must know core/v1 and the compute API, and its cache
// should select Pods with CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("kubernetes provider: Client is required")
	case r.APIReader == nil:
		return errors.New("kubernetes provider: APIReader is required")
	case r.Clock == nil:
		return errors.New("kubernetes provider: Clock is required")
	case r.RecheckAfter < 0:
		return fmt.Errorf("kubernetes provider: RecheckAfter %s is negative", r.RecheckAfter)
	case r.AllocationRatio != 0 && !(r.AllocationRatio >= 1) || math.IsInf(r.AllocationRatio, 0):
		return fmt.Errorf("kubernetes provider: AllocationRatio %g must be at least 1", r.AllocationRatio)
	case !mgr.GetScheme().Recognizes(corev1.SchemeGroupVersion.WithKind("Pod")):
		return errors.New("kubernetes provider: the manager's scheme does not know core/v1: add clientgoscheme.AddToScheme to it")
	case !mgr.GetScheme().Recognizes(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")):
		return errors.New("kubernetes provider: the manager's scheme does not know networking.k8s.io/v1: add clientgoscheme.AddToScheme to it")
	}
	switch r.NetworkPolicyEnforcement {
	case "":
		r.NetworkPolicyEnforcement = EnforcementNone
	case EnforcementNone, EnforcementEnforced:
	default:
		return fmt.Errorf("kubernetes provider: NetworkPolicyEnforcement %q is not one of %v", r.NetworkPolicyEnforcement, NetworkPolicyEnforcements)
	}
	if r.RecheckAfter == 0 {
		r.RecheckAfter = DefaultRecheckAfter
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	r.writes = &instancewrite.Writer{Client: r.Client, Clock: r.Clock, FieldOwner: FieldOwner, AddressesFromNetwork: r.AddressesFromNetwork, Own: &r.mem.own}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.Instance{}).
		Owns(&corev1.Pod{}).
		Owns(&networkingv1.NetworkPolicy{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile runs, reports on or tears down one Instance.
//
// Between reconciles the provider remembers, per Instance (mem, cleared
// by forget when the Instance is gone):
//
//   - its own writes to the Instance (ownwrites): a version older than
//     its last write is skipped, the event of that write is on its way.
//     Lost, such a version is reconciled once more and its write repeated;
//     a restarted process's cache starts from a fresh list and holds none.
//   - the Pods it created that its cache does not show yet, for at most
//     createdTTL: until then it neither creates the Pod again nor lets a
//     deleting Instance go. Lost on restart, the new process's cache lists
//     the Pods afresh: at worst a create answered AlreadyExists.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.writes.Dispatch(ctx, req.NamespacedName, func() { r.mem.forget(req.NamespacedName) },
		instancewrite.Stages{Run: r.run, Teardown: r.teardown, Suspend: r.suspend})
}

// run runs an Instance that is to run: it fences it with its
// NetworkPolicy, creates, keeps or replaces its Pod and reports on it.
func (r *Reconciler) run(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	want, obs, err := r.observe(ctx, inst)
	if err != nil {
		return ctrl.Result{}, err
	}
	out, err := r.fence(ctx, inst, decide(inst, obs, r.RecheckAfter))
	if err != nil {
		return ctrl.Result{}, err
	}
	switch out.action {
	case keep:
		// The Pod is as it should be, or on its way: report it.
	case create:
		if out, err = r.createPod(ctx, inst, want, out); err != nil {
			return ctrl.Result{}, err
		}
	case remove:
		if err := r.deletePod(ctx, obs.pod); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.writes.ApplyStatus(ctx, inst, r.statusOf(inst, out)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: out.requeueAfter}, nil
}

// observe builds the Pod the Instance needs and reads the Pod of its name
// and, when there is none to report on, the ConfigMaps and Secrets the new
// one would need.
func (r *Reconciler) observe(ctx context.Context, inst *computev1alpha.Instance) (*corev1.Pod, observation, error) {
	var obs observation
	itypes, err := catalog.Load(ctx, r.Client)
	if err != nil {
		return nil, obs, err
	}
	want, sizeErr := podWithTypes(inst, itypes, r.AllocationRatio)
	if sizeErr != nil {
		obs.problem = sizeErr.Error()
	}
	key := client.ObjectKeyFromObject(inst)
	pod := &corev1.Pod{}
	switch err := r.Client.Get(ctx, key, pod); {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return nil, obs, fmt.Errorf("failed to get the Pod of Instance %s: %w", inst.Name, err)
	default:
		r.mem.created.Forget(key)
		obs.pod = pod
	}
	if errors.Is(sizeErr, sizing.ErrUnsizable) && pod != nil && ownedBy(pod, inst) &&
		pod.DeletionTimestamp == nil && pod.Annotations[TemplateHashAnnotation] == templateHash(inst) {
		// The catalog lacks the Instance's type (a plane upgraded before
		// its InstanceTypes were published, a cell the catalog has not
		// reached yet): the Pod of the current template keeps running at
		// the size it was made with; only a new one needs the catalog.
		obs.problem = ""
	}
	if pod != nil || want == nil {
		return want, obs, nil
	}
	if obs.creating = r.mem.created.Unseen(key, createdTTL); obs.creating > 0 {
		return want, obs, nil
	}
	for _, ref := range references(inst, want) {
		md := &metav1.PartialObjectMetadata{}
		md.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.kind))
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: ref.object}, md)
		switch {
		case apierrors.IsNotFound(err):
			obs.missing = append(obs.missing, ref)
		case err != nil:
			return nil, obs, fmt.Errorf("failed to get %s of Instance %s: %w", ref, inst.Name, err)
		}
	}
	return want, obs, nil
}

// createPod holds the provider's finalizer on the Instance and creates its
// Pod. It returns the outcome to report: out, unless the API refused the
// Pod or a Pod the provider did not create holds its name.
func (r *Reconciler) createPod(ctx context.Context, inst *computev1alpha.Instance, pod *corev1.Pod, out outcome) (outcome, error) {
	if !controllerutil.ContainsFinalizer(inst, Finalizer) {
		if err := r.writes.ApplyFinalizer(ctx, inst, Finalizer, true); err != nil {
			return out, err
		}
	}
	log := ctrl.LoggerFrom(ctx)
	err := r.Client.Create(ctx, pod, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		log.V(1).Info("Created the Pod of an Instance", "pod", klog.KObj(pod))
		r.mem.created.Wrote(client.ObjectKeyFromObject(inst), pod.UID, pod.ResourceVersion)
		return out, nil
	case apierrors.IsInvalid(err):
		// The same Instance builds the same Pod: retrying cannot help, a
		// new Instance (a new template) brings a new Pod.
		return refused("the cell's API server refused the pod: " + apiMessage(err)), nil
	case names.NotGrantedYet(err, inst.CreationTimestamp.Time, r.Clock.Now()):
		// The provider creates Pods in a namespace only once the cell's
		// manager has bound it compute-kubernetes-provider-pods there
		// (internal/controller/nsgrant), moments after the namespace
		// appears; an Instance this young may be in one that new.
		log.V(1).Info("The cell refused the Pod of a new Instance; waiting for the namespace's grant", "pod", klog.KObj(pod))
		out.requeueAfter = grantRetry
		return out, nil
	case apierrors.IsForbidden(err):
		// A ResourceQuota or an admission policy of the cell's namespace
		// (or the provider's RBAC): the Instance says so, and the
		// provider tries again, as a change there brings no event.
		log.Info("The cell refused the Pod of an Instance", "pod", klog.KObj(pod), "reason", apiMessage(err))
		out.programmed, out.available = provisioning("the cell's API server forbids the pod: " + apiMessage(err))
		out.requeueAfter = r.RecheckAfter
		return out, nil
	case !apierrors.IsAlreadyExists(err):
		return out, fmt.Errorf("failed to create the Pod of Instance %s: %w", inst.Name, err)
	}
	// The name is taken by a Pod the cache does not show: one the provider
	// created that the cache has not seen yet, or someone else's.
	md := &metav1.PartialObjectMetadata{}
	md.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), md); err != nil {
		return out, fmt.Errorf("failed to get Pod %s, which exists: %w", pod.Name, err)
	}
	if _, ours := md.Labels[InstanceLabel]; ours {
		out.requeueAfter = time.Second
		return out, nil
	}
	out = refused(fmt.Sprintf("pod %s in namespace %s was not created by the kubernetes runtime provider (it has no %s label) and holds the instance's name: delete it",
		pod.Name, pod.Namespace, InstanceLabel))
	out.requeueAfter = r.RecheckAfter
	return out, nil
}

// deletePod deletes a Pod (that very Pod: a newer one of the same name is
// left alone).
func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	deleted, err := r.deleteExact(ctx, pod, "Pod")
	if deleted {
		ctrl.LoggerFrom(ctx).V(1).Info("Deleted a Pod", "pod", klog.KObj(pod))
	}
	return err
}

// deleteExact deletes obj, that very object: a newer one of the same name
// is left alone, and one already gone or replaced is no error. It reports
// whether it deleted obj; kind names obj in an error.
func (r *Reconciler) deleteExact(ctx context.Context, obj client.Object, kind string) (bool, error) {
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to delete %s %s: %w", kind, obj.GetName(), err)
	}
	return true, nil
}

// stopPod deletes the Pod of an Instance that is to stop, unless it is
// already going, and returns it; nil when the Instance has none. A Pod
// the provider just created may not have reached the cache: then it
// returns how long to wait for it before looking again.
func (r *Reconciler) stopPod(ctx context.Context, inst *computev1alpha.Instance) (*corev1.Pod, time.Duration, error) {
	key := client.ObjectKeyFromObject(inst)
	pod := &corev1.Pod{}
	switch err := r.Client.Get(ctx, key, pod); {
	case apierrors.IsNotFound(err):
		return nil, r.mem.created.Unseen(key, createdTTL), nil
	case err != nil:
		return nil, 0, fmt.Errorf("failed to get the Pod of Instance %s: %w", inst.Name, err)
	}
	r.mem.created.Forget(key)
	if pod.DeletionTimestamp == nil {
		if err := r.deletePod(ctx, pod); err != nil {
			return nil, 0, err
		}
	}
	return pod, 0, nil
}

// teardown stops a deleting Instance: it deletes the Pod, waits for it to
// be gone, then lets the Instance go.
func (r *Reconciler) teardown(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(inst, Finalizer) {
		return ctrl.Result{}, nil
	}
	pod, wait, err := r.stopPod(ctx, inst)
	if wait > 0 || err != nil {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	if pod == nil {
		// The policy outlives the Pod it fences, and goes before the
		// Instance.
		if err := r.deletePolicy(ctx, inst); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.writes.ApplyFinalizer(ctx, inst, Finalizer, false); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil
	}
	want := instancewrite.Current(inst)
	want.Conditions = []metav1.Condition{
		instancewrite.ConditionOr(inst, computev1alpha.ConditionProgrammed, condition(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the instance is being deleted")),
		condition(computev1alpha.ConditionAvailable, metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the pod is being deleted"),
	}
	// The Pod's deletion brings the Instance back.
	return ctrl.Result{}, r.writes.ApplyStatus(ctx, inst, want)
}

// suspend stops a suspended Instance and keeps it: its Pod is deleted and,
// once it is gone, Available turns False with reason Suspended (compute
// then reports the Instance suspended). The finalizer stays; the Instance
// starts again, under the same name, when the suspension is lifted.
func (r *Reconciler) suspend(ctx context.Context, inst *computev1alpha.Instance) (ctrl.Result, error) {
	pod, wait, err := r.stopPod(ctx, inst)
	if wait > 0 || err != nil {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	want := instancewrite.Status{Conditions: suspendedConditions(pod != nil)}
	if inst.Status.Controller != nil {
		want.Hash = inst.Status.Controller.ObservedTemplateHash
	}
	// The Pod's deletion brings the Instance back.
	return ctrl.Result{}, r.writes.ApplyStatus(ctx, inst, want)
}

// statusOf returns the status fields the provider writes for an outcome.
func (r *Reconciler) statusOf(inst *computev1alpha.Instance, out outcome) instancewrite.Status {
	want := instancewrite.Status{Conditions: []metav1.Condition{out.programmed, out.available}, Hash: out.hash}
	if out.podIP == "" || r.AddressesFromNetwork {
		return want
	}
	// A Pod has one network interface, the cluster network's: the first
	// interface gets its address, the others none.
	want.Interfaces = make([]computev1alpha.InstanceNetworkInterfaceStatus, max(len(inst.Spec.NetworkInterfaces), 1))
	want.Interfaces[0].Assignments.NetworkIP = ptr.To(out.podIP)
	return want
}

// apiMessage returns the message of an API error.
func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}
