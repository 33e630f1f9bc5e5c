package cellhealth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// ControllerName names the tracker in logs and metrics.
const ControllerName = "cell-reachability"

// Health is what compute knows about the cells of a city.
type Health struct {
	// Unreachable is set while a cell of the city is not heard from.
	Unreachable bool
	// LastSeen is when the cell was last heard from: the last renewal of
	// its heartbeat, else when Karmada lost it. Zero while reachable.
	LastSeen time.Time
	// Message says which cell, which signal, and since when.
	Message string
}

// Tracker follows the reachability of every city's cells from the
// federation plane and tells its listeners when a city's verdict changes.
// Until it has seen a city's cells it reports the city reachable: it never
// calls a city stale for lack of news about its own start.
type Tracker struct {
	// Hub reads Clusters and Leases; the hub cluster's cache by default.
	Hub client.Reader
	// Clock is the real clock when nil.
	Clock clock.PassiveClock

	mu sync.Mutex
	// cities holds the last verdict per city code.
	cities map[string]Health
	// clusterCity remembers each cluster's city, to re-judge the city when
	// the cluster is deleted or relabelled.
	clusterCity map[string]string
	listeners   []func(city string)
}

// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=compute-system,resources=leases,verbs=get;list;watch

// City returns what is known about city's cells.
func (t *Tracker) City(city string) Health {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cities[city]
}

// OnChange registers fn, called with the city code whenever a city's
// verdict changes. fn must not block.
func (t *Tracker) OnChange(fn func(city string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listeners = append(t.listeners, fn)
}

// SetupWithManager registers the tracker with mgr, watching Karmada's
// Clusters and the heartbeat Leases in hubCluster (added to mgr by the
// caller). Requests are cluster names.
func (t *Tracker) SetupWithManager(mgr ctrl.Manager, hubCluster cluster.Cluster) error {
	if hubCluster == nil {
		return errors.New("cell reachability: the federation plane is required")
	}
	if t.Hub == nil {
		t.Hub = hubCluster.GetClient()
	}
	if t.Clock == nil {
		t.Clock = clock.RealClock{}
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == Namespace })
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), client.Object(&clusterv1alpha1.Cluster{}),
			&handler.EnqueueRequestForObject{})).
		// A Lease is named after its cell's cluster: the same request.
		WatchesRawSource(source.Kind(hubCluster.GetCache(), client.Object(&coordinationv1.Lease{}),
			&handler.EnqueueRequestForObject{}, inNamespace)).
		Complete(t)
}

// Reconcile judges the city of the cluster named req.Name again.
func (t *Tracker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cl := &clusterv1alpha1.Cluster{}
	err := t.Hub.Get(ctx, client.ObjectKey{Name: req.Name}, cl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("failed to read cluster %s: %w", req.Name, err)
	}
	t.mu.Lock()
	previous := t.clusterCity[req.Name]
	city := ""
	if err == nil {
		city = cl.Labels[computev1alpha.CityCodeTopologyLabel]
	}
	if t.clusterCity == nil {
		t.clusterCity = map[string]string{}
	}
	if city == "" {
		delete(t.clusterCity, req.Name)
	} else {
		t.clusterCity[req.Name] = city
	}
	t.mu.Unlock()

	var requeue time.Duration
	for _, c := range compact(previous, city) {
		after, err := t.judge(ctx, c)
		if err != nil {
			return reconcile.Result{}, err
		}
		if after > 0 && (requeue == 0 || after < requeue) {
			requeue = after
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// compact returns the non-empty, distinct codes among a and b.
func compact(a, b string) []string {
	out := make([]string, 0, 2)
	for _, c := range []string{a, b} {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// judge computes city's verdict from its clusters and their Leases,
// publishes it when it changed, and returns when a Lease that still vouches
// for the city expires (zero when none does).
func (t *Tracker) judge(ctx context.Context, city string) (time.Duration, error) {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := t.Hub.List(ctx, clusters, client.MatchingLabels{computev1alpha.CityCodeTopologyLabel: city}); err != nil {
		return 0, fmt.Errorf("failed to list the clusters of %s: %w", city, err)
	}
	now := t.Clock.Now()
	verdicts := make([]cellVerdict, 0, len(clusters.Items))
	var expiresIn time.Duration
	for i := range clusters.Items {
		cl := &clusters.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		l := &coordinationv1.Lease{}
		if err := t.Hub.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: cl.Name}, l); err != nil {
			if !apierrors.IsNotFound(err) {
				return 0, fmt.Errorf("failed to read the heartbeat of cluster %s: %w", cl.Name, err)
			}
			l = nil
		}
		v := judgeCell(cl, l, now)
		verdicts = append(verdicts, v)
		if !v.unreachable && v.expiresIn > 0 && (expiresIn == 0 || v.expiresIn < expiresIn) {
			expiresIn = v.expiresIn
		}
	}
	t.publish(city, combine(verdicts))
	if len(verdicts) == 0 {
		// A city without cells is no city to alert on.
		forgetCity(city)
	}
	if expiresIn > 0 {
		// Wake just after the Lease runs out, unless a renewal comes first.
		expiresIn += 100 * time.Millisecond
	}
	return expiresIn, nil
}

// cellVerdict is one cluster's reachability.
type cellVerdict struct {
	name        string
	unreachable bool
	lastSeen    time.Time
	message     string
	// expiresIn is how long the heartbeat still vouches for a reachable
	// cell; zero when it has no heartbeat.
	expiresIn time.Duration
}

// judgeCell judges one cluster from Karmada's Ready condition and the
// cell's heartbeat Lease (nil when the cell has none).
func judgeCell(cl *clusterv1alpha1.Cluster, l *coordinationv1.Lease, now time.Time) cellVerdict {
	v := cellVerdict{name: cl.Name}
	var renewed time.Time
	if l != nil && l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil {
		renewed = l.Spec.RenewTime.Time
		expiry := renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		if now.Before(expiry) {
			v.expiresIn = expiry.Sub(now)
		} else {
			v.unreachable, v.lastSeen = true, renewed
			v.message = fmt.Sprintf("no heartbeat from cell %s since %s", cl.Name, stamp(renewed))
		}
	}
	ready := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready != nil && ready.Status != metav1.ConditionTrue {
		lost := ready.LastTransitionTime.Time
		if !v.unreachable {
			v.unreachable, v.lastSeen = true, lost
			if !renewed.IsZero() && renewed.Before(lost) {
				v.lastSeen = renewed
			}
			v.message = fmt.Sprintf("Karmada reports cluster %s not Ready since %s (%s: %s)", cl.Name, stamp(lost), ready.Reason, ready.Message)
		} else {
			v.message += fmt.Sprintf("; Karmada reports it not Ready (%s)", ready.Reason)
		}
	}
	return v
}

// combine folds the verdicts of a city's clusters: the city is unreachable
// while any of them is, and was last seen when the earliest of those was.
func combine(vs []cellVerdict) Health {
	var h Health
	msgs := make([]string, 0, len(vs))
	sort.Slice(vs, func(i, j int) bool { return vs[i].name < vs[j].name })
	for _, v := range vs {
		if !v.unreachable {
			continue
		}
		if !h.Unreachable || v.lastSeen.Before(h.LastSeen) {
			h.LastSeen = v.lastSeen
		}
		h.Unreachable = true
		msgs = append(msgs, v.message)
	}
	h.Message = strings.Join(msgs, "; ")
	return h
}

// publish records city's verdict and calls the listeners when it changed.
func (t *Tracker) publish(city string, h Health) {
	t.mu.Lock()
	if t.cities == nil {
		t.cities = map[string]Health{}
	}
	prev, known := t.cities[city]
	changed := !known && h.Unreachable ||
		known && (prev.Unreachable != h.Unreachable || !prev.LastSeen.Equal(h.LastSeen) || prev.Message != h.Message)
	t.cities[city] = h
	listeners := slices.Clone(t.listeners)
	t.mu.Unlock()
	setReachable(city, h)
	if !changed {
		return
	}
	for _, fn := range listeners {
		fn(city)
	}
}

// stamp formats a time for a condition message: absolute, so the message
// does not change while nothing else does.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// CityReachability reports city's verdict (federation.CityHealth).
func (t *Tracker) CityReachability(city string) (unreachable bool, lastSeen time.Time, message string) {
	h := t.City(city)
	return h.Unreachable, h.LastSeen, h.Message
}
