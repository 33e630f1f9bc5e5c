// Package podevents is the cell role's event forwarder: it carries what the
// cell says about an Instance's Pod — the kubelet's and the scheduler's
// events (image pulled or not, started, killed, back-off, probe failures,
// no room on a node) and an OOMKilled event the cell itself does not write
// (a container killed for memory is only a reason in the Pod's status) —
// to the federation plane, as events regarding the Instance's hub copy
// (the write-back's). The management plane's projector carries them on to
// the project.
//
// It works per Instance, level-based: the cell Instance, its hub copy and
// its Pod are read from the caches, every event of the Pod since the
// Instance was created is the desired set (the newest MaxPerInstance of
// them), and each is written to the hub only when its copy says something
// else (internal/eventcopy: same name, count, last time, message). So a
// kubelet's repeated event (its count grows) updates one hub event, and a
// restart of the forwarder writes nothing that is already there.
//
// Rules:
//
//   - only an Instance whose hub copy is its own (the copy's source UID is
//     the cell Instance's) gets events; a copy not written yet brings the
//     Instance back when it is (the hub Instances are watched);
//   - every hub event is labelled with the cell's city
//     (compute.datumapis.com/city-code) — the hub's cell-isolation policy
//     refuses a cell any other — and with the Instance's Workload;
//   - writes to the hub are rate-limited (Limiter): a cell in a crash loop
//     cannot flood the federation plane; what waits is written later,
//     newest state first, never dropped while its Instance lives;
//   - an event of a previous Instance of the same name (a restart
//     recreates it) is not carried: it is older than the Instance.
package podevents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/eventcopy"
	"github.com/citycells/compute/internal/hubclients"
)

// ControllerName names the forwarder in logs and metrics, and reports the
// events it writes.
const ControllerName = "pod-events"

// Reporter is the reporting controller of every event the forwarder
// writes, and the component of the OOMKilled events it makes.
const Reporter = "compute.datumapis.com/" + ControllerName

// MaxPerInstance is how many of an Instance's newest events are carried.
const MaxPerInstance = 20

// Default write rate to the hub, per cell: sustained and burst.
const (
	DefaultWritesPerSecond = 10
	DefaultBurst           = 50
)

// involvedName indexes the cell's events by the name of what they regard.
const involvedName = "involvedObject.name"

// CacheByObject returns the manager cache options the forwarder needs: the
// cell's events regarding Pods only.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.kind", "Pod")},
	}
}

// Reconciler forwards the events of the cell's Instances' Pods.
type Reconciler struct {
	// Cell reads Instances, Pods and events from the manager's cache.
	Cell client.Client
	// Hub reads the hub copies from its cache and writes events.
	Hub client.Client
	// HubReader reads a hub event uncached when its create finds it there.
	HubReader client.Reader
	// City is the cell's city code (--cell-city-code); when empty, the
	// hub copy's city label is used.
	City string
	// Limiter bounds the writes to the hub; DefaultWritesPerSecond and
	// DefaultBurst when nil.
	Limiter *rate.Limiter
	// Clock reads the time for the limiter; the real clock when nil.
	Clock clock.PassiveClock

	carrier eventcopy.Carrier
	// sent remembers, per Instance, what each of its hub events was last
	// written with, so an unchanged event costs no request.
	mu   sync.Mutex
	sent map[client.ObjectKey]map[string]string
}

// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch;create;update

// SetupWithManager registers the forwarder with mgr, the cell's manager,
// writing to hubCluster (which the caller adds to mgr).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, hubCluster cluster.Cluster) error {
	if mgr == nil || hubCluster == nil {
		return errors.New("pod events: a manager and the federation plane are required")
	}
	if r.Cell == nil {
		r.Cell = mgr.GetClient()
	}
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.Limiter == nil {
		r.Limiter = rate.NewLimiter(DefaultWritesPerSecond, DefaultBurst)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.sent = map[client.ObjectKey]map[string]string{}
	r.carrier = eventcopy.Carrier{Limiter: r.Limiter, Results: forwarded, Now: r.Clock.Now}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Event{}, involvedName, func(o client.Object) []string {
		return []string{o.(*corev1.Event).InvolvedObject.Name}
	}); err != nil {
		return fmt.Errorf("failed to index the cell's events: %w", err)
	}
	registerMetrics()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&computev1alpha.Instance{}).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(regarded)).
		// A Pod's container statuses say when it was killed for memory.
		Watches(&corev1.Pod{}, &handler.EnqueueRequestForObject{}).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &computev1alpha.Instance{},
			&handler.TypedEnqueueRequestForObject[*computev1alpha.Instance]{})).
		Complete(r)
}

// regarded maps a cell event to the Instance of the Pod it regards (a
// Pod has its Instance's name and namespace).
func regarded(_ context.Context, o client.Object) []reconcile.Request {
	ev, ok := o.(*corev1.Event)
	if !ok || ev.InvolvedObject.Kind != "Pod" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}}}
}

// Reconcile forwards the events of one Instance's Pod.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	inst := &computev1alpha.Instance{}
	if err := r.Cell.Get(ctx, req.NamespacedName, inst); err != nil {
		if apierrors.IsNotFound(err) {
			r.remember(req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	copyOf := &computev1alpha.Instance{}
	if err := r.Hub.Get(ctx, req.NamespacedName, copyOf); err != nil {
		// Not written back yet: its write brings the Instance back.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if copyOf.Annotations[computev1alpha.SourceUIDAnnotation] != string(inst.UID) {
		return ctrl.Result{}, nil
	}
	desired, err := r.desired(ctx, inst, copyOf)
	if err != nil {
		return ctrl.Result{}, err
	}
	sent := r.remembered(req.NamespacedName)
	// What is still desired stays remembered, written now or before (a
	// write held back by the rate keeps its earlier one).
	now := make(map[string]string, len(desired))
	for _, ev := range desired {
		if sig, ok := sent[ev.Name]; ok {
			now[ev.Name] = sig
		}
	}
	defer func() { r.remember(req.NamespacedName, now) }()
	for _, ev := range desired {
		sig := signature(ev)
		if sent[ev.Name] == sig {
			continue
		}
		if wait, err := r.carrier.Write(ctx, r.Hub, r.HubReader, ev); err != nil || wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, err
		}
		now[ev.Name] = sig
	}
	return ctrl.Result{}, nil
}

// desired returns the hub events of inst (the cell Instance) regarding
// copyOf (its hub copy): its Pod's events since inst was created and the
// OOM kills its Pod's status shows, the newest MaxPerInstance.
func (r *Reconciler) desired(ctx context.Context, inst, copyOf *computev1alpha.Instance) ([]*corev1.Event, error) {
	var list corev1.EventList
	if err := r.Cell.List(ctx, &list, client.InNamespace(inst.Namespace), client.MatchingFields{involvedName: inst.Name}); err != nil {
		return nil, fmt.Errorf("failed to list the events of Pod %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	sources := make([]*corev1.Event, 0, len(list.Items))
	for i := range list.Items {
		ev := &list.Items[i]
		if _, last, _ := eventcopy.Times(ev); ev.InvolvedObject.Kind == "Pod" && !last.Before(&inst.CreationTimestamp) {
			sources = append(sources, ev)
		}
	}
	pod := &corev1.Pod{}
	switch err := r.Cell.Get(ctx, client.ObjectKeyFromObject(inst), pod); {
	case err == nil && controlledBy(pod, inst):
		sources = append(sources, OOMKills(pod)...)
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to read Pod %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	slices.SortFunc(sources, newestFirst)
	if len(sources) > MaxPerInstance {
		sources = sources[:MaxPerInstance]
	}
	city := r.City
	if city == "" {
		city = copyOf.Labels[computev1alpha.CityCodeLabel]
	}
	labels := map[string]string{computev1alpha.CityCodeLabel: city}
	if w := copyOf.Labels[computev1alpha.WorkloadNameLabel]; w != "" {
		labels[computev1alpha.WorkloadNameLabel] = w
	}
	out := make([]*corev1.Event, 0, len(sources))
	for _, src := range sources {
		regarding := corev1.ObjectReference{
			APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.InstanceKind,
			Name: copyOf.Name, UID: copyOf.UID, FieldPath: src.InvolvedObject.FieldPath,
		}
		out = append(out, eventcopy.Copy(src, copyOf.Namespace, src.Name, regarding, labels, Reporter, city))
	}
	return out, nil
}

// controlledBy reports whether pod is inst's (its controller
// owner reference names inst's UID).
func controlledBy(pod *corev1.Pod, inst *computev1alpha.Instance) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID == inst.UID
		}
	}
	return false
}

// newestFirst orders events by the last time they were seen, newest first.
func newestFirst(a, b *corev1.Event) int {
	_, la, _ := eventcopy.Times(a)
	_, lb, _ := eventcopy.Times(b)
	if c := lb.Compare(la.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// remembered returns what the hub events of an Instance were last written
// with, by event name.
func (r *Reconciler) remembered(key client.ObjectKey) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[key]
}

// remember records the hub events of an Instance as written (none: it is
// gone), so the memory follows the live events.
func (r *Reconciler) remember(key client.ObjectKey, sent map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(sent) == 0 {
		delete(r.sent, key)
		return
	}
	r.sent[key] = sent
}

// signature is what a hub event says, to tell whether it changed.
func signature(ev *corev1.Event) string {
	return fmt.Sprintf("%d|%s|%s|%s|%s|%s", ev.Count, ev.LastTimestamp.UTC().Format(time.RFC3339), ev.Type, ev.Reason, ev.InvolvedObject.UID, ev.Message)
}
