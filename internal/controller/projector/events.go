package projector

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/eventcopy"
	"github.com/citycells/compute/internal/hubclients"
)

// EventControllerName names the event projector in logs and metrics, and
// reports the events it writes in the project.
const EventControllerName = "instance-event-projector"

// EventReporter is the reporting controller of the events the event
// projector writes.
const EventReporter = "compute.datumapis.com/" + EventControllerName

// Default write rate of the event projector to the project planes,
// together: sustained and burst.
const (
	DefaultEventWritesPerSecond = 20
	DefaultEventBurst           = 100
)

// projectionWait is how long an event waits, at most, for the projection
// of its Instance to show (it normally comes with the Instance's own
// write-back); then it is not carried.
const projectionWait = 2 * time.Minute

// EventReconciler carries the hub events regarding Instances (the cells'
// Pod events, internal/controller/podevents) to the project: each becomes
// an event regarding the Instance's projection, and a Warning one also an
// event regarding its Workload ("Instance web-dfw-0 in DFW: ..."), Datum's
// activity on the Workload. An event is carried only when its city (the
// label the hub's cell-isolation policy holds to its writer) is its
// Instance's: a cell cannot put words in another city's Instances. Writes
// are rate-limited and made only when the copy says something else.
type EventReconciler struct {
	// Manager resolves project clusters by name.
	Manager mcmanager.Manager
	// Hub reads hub events, Instances and namespaces from its cache.
	Hub client.Client
	// HubReader reads a hub namespace the cache does not hold.
	HubReader client.Reader
	// Limiter bounds the writes to the project planes;
	// DefaultEventWritesPerSecond and DefaultEventBurst when nil.
	Limiter *rate.Limiter
	// Clock ages events; the real clock when nil.
	Clock clock.PassiveClock

	carrier eventcopy.Carrier
	// sent remembers, per hub event, what its project copies were last
	// written with (by project cluster, namespace and name), so an
	// unchanged copy costs no request; an expired hub event's entry goes.
	mu   sync.Mutex
	sent map[client.ObjectKey]map[string]string
}

// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch;create;update

// SetupWithManager registers the event projector on mgr's local manager;
// its requests are the hub events regarding Instances.
func (r *EventReconciler) SetupWithManager(mgr mcmanager.Manager, hubCluster cluster.Cluster) error {
	r.Manager = mgr
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.Limiter == nil {
		r.Limiter = rate.NewLimiter(DefaultEventWritesPerSecond, DefaultEventBurst)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.sent = map[client.ObjectKey]map[string]string{}
	r.carrier = eventcopy.Carrier{Limiter: r.Limiter, Results: eventsProjected, Now: r.Clock.Now}
	aboutInstances := predicate.NewTypedPredicateFuncs(func(ev *corev1.Event) bool {
		return ev.InvolvedObject.Kind == computev1alpha.InstanceKind && ev.Labels[computev1alpha.CityCodeLabel] != ""
	})
	return ctrl.NewControllerManagedBy(mgr.GetLocalManager()).
		Named(EventControllerName).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &corev1.Event{},
			&handler.TypedEnqueueRequestForObject[*corev1.Event]{}, aboutInstances)).
		Complete(r)
}

// Reconcile carries one hub event to the project.
func (r *EventReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	ev := &corev1.Event{}
	if err := r.Hub.Get(ctx, req.NamespacedName, ev); err != nil {
		if apierrors.IsNotFound(err) { // expired
			r.mu.Lock()
			delete(r.sent, req.NamespacedName)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	inst := &computev1alpha.Instance{}
	if err := r.Hub.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ev.InvolvedObject.Name}, inst); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // gone, with its projection
	}
	if inst.UID != ev.InvolvedObject.UID {
		return ctrl.Result{}, nil // about an earlier Instance of that name
	}
	if city := ev.Labels[computev1alpha.CityCodeLabel]; city != inst.Labels[computev1alpha.CityCodeLabel] {
		eventsRefused.WithLabelValues(ReasonCityMismatch).Inc()
		ctrl.LoggerFrom(ctx).Info("Not projecting an event of another city's Instance",
			"event", klog.KObj(ev), "eventCity", city, "instanceCity", inst.Labels[computev1alpha.CityCodeLabel])
		return ctrl.Result{}, nil
	}
	ns, err := r.hubNamespaceOf(ctx, inst.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	id, reason, _ := resolve(inst, ns)
	if reason != "" {
		return ctrl.Result{}, nil // the Instance projector reports it
	}
	cl, err := r.Manager.GetCluster(ctx, id.cluster)
	if err != nil {
		return ctrl.Result{RequeueAfter: clusterRetryAfter}, nil
	}
	proj := &computev1alpha.Instance{}
	err = cl.GetClient().Get(ctx, client.ObjectKey{Namespace: id.namespace, Name: inst.Name}, proj)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil || !isProjection(proj) || proj.Annotations[computev1alpha.SourceUIDAnnotation] != inst.Annotations[computev1alpha.SourceUIDAnnotation] {
		// The projection comes with the Instance's own write-back.
		if _, last, _ := eventcopy.Times(ev); r.Clock.Since(last.Time) < projectionWait {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, nil
	}
	return r.carry(ctx, req.NamespacedName, id.cluster, cl, r.copies(ctx, cl, ev, proj))
}

// hubNamespaceOf is the hub namespace name, nil when it does not exist.
func (r *EventReconciler) hubNamespaceOf(ctx context.Context, name string) (*corev1.Namespace, error) {
	return (&Reconciler{Hub: r.Hub, HubReader: r.HubReader}).hubNamespace(ctx, name)
}

// copies returns the project events of hub event ev: one regarding proj,
// the Instance's projection, and for a Warning one regarding its Workload.
func (r *EventReconciler) copies(ctx context.Context, cl cluster.Cluster, ev *corev1.Event, proj *computev1alpha.Instance) []*corev1.Event {
	city := ev.Labels[computev1alpha.CityCodeLabel]
	labels := map[string]string{computev1alpha.CityCodeLabel: city}
	workload := proj.Labels[computev1alpha.WorkloadNameLabel]
	if workload != "" {
		labels[computev1alpha.WorkloadNameLabel] = workload
	}
	regarding := corev1.ObjectReference{
		APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.InstanceKind,
		Name: proj.Name, UID: proj.UID, FieldPath: ev.InvolvedObject.FieldPath,
	}
	out := []*corev1.Event{eventcopy.Copy(ev, proj.Namespace, ev.Name, regarding, labels, EventReporter, city)}
	if ev.Type != corev1.EventTypeWarning || workload == "" {
		return out
	}
	w := &computev1alpha.Workload{}
	if err := cl.GetClient().Get(ctx, client.ObjectKey{Namespace: proj.Namespace, Name: workload}, w); err != nil {
		return out
	}
	summary := ev.DeepCopy()
	summary.Message = fmt.Sprintf("Instance %s in %s: %s", proj.Name, city, ev.Message)
	summaryLabels := map[string]string{computev1alpha.EventSummaryOfLabel: proj.Name}
	for k, v := range labels {
		summaryLabels[k] = v
	}
	regardingWorkload := corev1.ObjectReference{
		APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.WorkloadKind, Name: w.Name, UID: w.UID,
	}
	return append(out, eventcopy.Copy(summary, proj.Namespace, w.Name+"."+ev.Name, regardingWorkload, summaryLabels, EventReporter, city))
}

// carry writes each project copy of hub event hubEvent that is not
// already written so, within the write rate.
func (r *EventReconciler) carry(ctx context.Context, hubEvent client.ObjectKey, clusterName string, cl cluster.Cluster, events []*corev1.Event) (ctrl.Result, error) {
	for _, ev := range events {
		key := clusterName + "/" + ev.Namespace + "/" + ev.Name
		sig := fmt.Sprintf("%d|%s|%s", ev.Count, ev.LastTimestamp.UTC().Format(time.RFC3339), ev.Message)
		r.mu.Lock()
		same := r.sent[hubEvent][key] == sig
		r.mu.Unlock()
		if same {
			continue
		}
		if wait, err := r.carrier.Write(ctx, cl.GetClient(), cl.GetAPIReader(), ev); err != nil || wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, err
		}
		r.mu.Lock()
		if r.sent[hubEvent] == nil {
			r.sent[hubEvent] = map[string]string{}
		}
		r.sent[hubEvent][key] = sig
		r.mu.Unlock()
	}
	return ctrl.Result{}, nil
}
