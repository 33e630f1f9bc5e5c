package federation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/phases"
)

// StatusResyncAnnotation on a hub WorkloadDeployment records when the
// federator last asked Karmada to collect the copy's status again
// (RFC 3339). Karmada carries the template's annotations to the member
// objects, so writing it changes the hub copy (its ResourceBinding is
// aggregated again), its Work and the cell's WorkloadDeployment (the
// work-status controller sees an update and reflects the cell's status
// again). See docs/faults.md, "Karmada after an etcd loss".
const StatusResyncAnnotation = "compute.datumapis.com/status-resync-requested"

// Defaults of the status resync.
const (
	// DefaultStatusResyncAfter is how long a hub copy's status may lag
	// its generation before the federator asks for it again. A healthy
	// chain reports a new generation in a few seconds.
	DefaultStatusResyncAfter = 20 * time.Second
	// maxResyncInterval bounds the wait between two requests for the same
	// copy: half of how long it has lagged, at least the threshold, so a
	// cell that really cannot report (its own reconcile failing) is asked
	// less and less often.
	maxResyncInterval = 5 * time.Minute
	// appliedWait is how long a lag on a binding that is scheduled but
	// not yet fully applied counts as Karmada still working.
	appliedWait = time.Minute
)

// StatusLags reports whether the status Karmada aggregated into hub copy
// does not describe it: the copy's generation is not observed yet, or no
// cell condition was ever collected. Both hold for a moment after every
// change; they last only when Karmada lost the collection.
func StatusLags(hubCopy *computev1alpha.WorkloadDeployment) bool {
	if hubCopy == nil || hubCopy.DeletionTimestamp != nil || hubCopy.Generation == 0 {
		return false
	}
	return hubCopy.Status.ObservedGeneration != hubCopy.Generation || len(hubCopy.Status.Conditions) == 0
}

// ResyncDue decides, for a hub copy whose status has lagged since
// lagSince, whether to ask Karmada to collect it again now; lastAsked is
// when it was last asked (zero for never). Otherwise it returns how long
// to wait before deciding again. It is pure.
func ResyncDue(lagSince, lastAsked, now time.Time, after time.Duration) (due bool, wait time.Duration) {
	if lagged := now.Sub(lagSince); lagged < after {
		return false, after - lagged
	}
	interval := min(max(now.Sub(lagSince)/2, after), maxResyncInterval)
	if !lastAsked.IsZero() {
		if since := now.Sub(lastAsked); since < interval {
			return false, interval - since
		}
	}
	return true, interval
}

// lagTracker remembers since when each hub copy generation's status has
// lagged. It is memory only: after a restart the lag counts again from
// the first reconcile, which delays a resync by at most the threshold.
type lagTracker struct {
	mu    sync.Mutex
	since map[types.UID]lagRecord
}

// lagRecord is when the status of one generation of a copy was first seen
// lagging.
type lagRecord struct {
	generation int64
	since      time.Time
}

// observe records hub copy's lag at now and returns since when it has
// lagged; lags is false when it does not lag (nothing is kept for it).
func (t *lagTracker) observe(hubCopy *computev1alpha.WorkloadDeployment, now time.Time) (since time.Time, lags bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !StatusLags(hubCopy) {
		if hubCopy != nil {
			delete(t.since, hubCopy.UID)
		}
		return time.Time{}, false
	}
	if t.since == nil {
		t.since = map[types.UID]lagRecord{}
	}
	rec, ok := t.since[hubCopy.UID]
	if !ok || rec.generation != hubCopy.Generation {
		rec = lagRecord{generation: hubCopy.Generation, since: now}
		t.since[hubCopy.UID] = rec
	}
	return rec.since, true
}

// forget drops what is kept for the copy with uid (it is being deleted).
func (t *lagTracker) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.since, uid)
}

// resyncStatus asks Karmada to collect a hub copy's status again when it
// has lagged its generation for longer than StatusResyncAfter, by writing
// StatusResyncAnnotation on the copy, at most once per interval. Karmada
// can lose one member's status after the etcd it shares with the planes
// comes back (docs/faults.md); nothing else would bring it back until the
// next change of the deployment. It waits while the city's cell is not
// heard from: no resync can reach it then.
func (r *Reconciler) resyncStatus(ctx context.Context, s *scope) (phases.Result, error) {
	hubCopy := s.hubCopy
	now := r.Clock.Now()
	lagSince, lags := r.lags.observe(hubCopy, now)
	if !lags || r.reachability(s.wd.Spec.CityCode).Unreachable {
		return phases.Result{}, nil
	}
	lastAsked, err := time.Parse(time.RFC3339, hubCopy.Annotations[StatusResyncAnnotation])
	if err != nil {
		lastAsked = time.Time{}
	}
	due, wait := ResyncDue(lagSince, lastAsked, now, r.StatusResyncAfter)
	if !due {
		return phases.Result{RequeueAfter: wait}, nil
	}
	if now.Sub(lagSince) < maxResyncInterval {
		busy, err := r.karmadaBusy(ctx, hubCopy, now.Sub(lagSince))
		if err != nil {
			return phases.Result{}, err
		}
		if busy {
			// Not lost: on its way. Asking again would only add work
			// to Karmada's queues (every request is several writes).
			return phases.Result{RequeueAfter: wait}, nil
		}
	}
	asked := hubCopy.DeepCopy()
	metav1.SetMetaDataAnnotation(&asked.ObjectMeta, StatusResyncAnnotation, now.UTC().Format(time.RFC3339))
	if err := r.Hub.Patch(ctx, asked, client.MergeFrom(hubCopy)); err != nil {
		return phases.Result{}, fmt.Errorf("failed to ask for the status of WorkloadDeployment %s/%s again: %w", hubCopy.Namespace, hubCopy.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Asked Karmada to collect a lagging status again", "hubCopy", client.ObjectKeyFromObject(hubCopy),
		"generation", hubCopy.Generation, "observedGeneration", hubCopy.Status.ObservedGeneration, "laggingFor", now.Sub(lagSince).Round(time.Second))
	s.hubCopy = asked
	return phases.Result{RequeueAfter: wait}, nil
}

// karmadaBusy reports whether Karmada has demonstrably not finished
// propagating hub copy yet, so a status that has lagged for lagged is on
// its way rather than lost: its ResourceBinding is not there or not
// scheduled, or (for the first appliedWait of the lag) not fully applied
// to its cluster. A loaded platform lags every new copy for a while
// (Karmada works through its queues), and a resync then would only add to
// them; the status Karmada loses after an etcd loss lags on a binding
// that is scheduled, and most often applied (the Applied condition itself
// may be what was lost, hence the bound). Read from the apiserver, not a
// cache: only a copy that lagged past the threshold is looked at. A lag
// that lasts maxResyncInterval is asked for whatever the binding says.
func (r *Reconciler) karmadaBusy(ctx context.Context, hubCopy *computev1alpha.WorkloadDeployment, lagged time.Duration) (bool, error) {
	rb := &workv1alpha2.ResourceBinding{}
	// Karmada names a template's binding "<name>-<kind>", lower-cased.
	key := types.NamespacedName{Namespace: hubCopy.Namespace, Name: strings.ToLower(hubCopy.Name + "-" + computev1alpha.WorkloadDeploymentKind)}
	if err := r.HubReader.Get(ctx, key, rb); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("failed to read ResourceBinding %s of the federation plane: %w", key, err)
	}
	if !meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha2.Scheduled) {
		return true, nil
	}
	return lagged < appliedWait && !meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha2.FullyApplied), nil
}
