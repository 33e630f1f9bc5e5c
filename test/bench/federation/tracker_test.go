//go:build bench

package federation

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// stream names one watched kind in one plane.
type stream string

// The watched streams.
const (
	projectWorkloads   stream = "project/Workload"
	projectDeployments stream = "project/WorkloadDeployment"
	projectInstances   stream = "project/Instance"
	hubDeployments     stream = "hub/WorkloadDeployment"
	hubInstances       stream = "hub/Instance"
	cellDeployments    stream = "cell/WorkloadDeployment"
	cellInstances      stream = "cell/Instance"
	projectClaims      stream = "project/ResourceClaim"
	cellConfigMaps     stream = "cell/ConfigMap"
	hubBindings        stream = "hub/ResourceBinding"
)

// tracker keeps the latest version of every object of the watched streams
// (all cells merged into the cell streams) and, on every event, evaluates
// the milestones of the current measurement, recording when each first
// holds. Watches, not polling: the planes see no extra load, and a
// milestone's time is when the event arrived.
type tracker struct {
	mu      sync.Mutex
	objects map[stream]map[string]client.Object
	// began is when the current measurement started.
	began time.Time
	// milestones of the current measurement, in report order.
	milestones []milestone
	// reached holds, per milestone name, the elapsed time at which it
	// first held.
	reached map[string]time.Duration
	// done is closed when every milestone has held.
	done chan struct{}
	// onTimeout, when set, reports what the planes hold when a
	// measurement times out.
	onTimeout func()
}

// milestone is a named condition over the tracked objects.
type milestone struct {
	name string
	test func(v view) bool
}

// view reads the tracked objects; only valid inside a milestone test.
type view struct{ t *tracker }

// of returns the tracked objects of a stream with label key=value.
func (v view) of(s stream, key, value string) []client.Object {
	var out []client.Object
	for _, o := range v.t.objects[s] {
		if o.GetLabels()[key] == value {
			out = append(out, o)
		}
	}
	return out
}

// named returns the tracked object of a stream with namespace/name.
func (v view) named(s stream, namespace, name string) client.Object {
	return v.t.objects[s][namespace+"/"+name]
}

func newTracker() *tracker {
	return &tracker{objects: map[stream]map[string]client.Object{}}
}

// watch follows list's kind in namespace of plane c into stream s until ctx
// ends, re-establishing the watch if the apiserver closes it.
func (t *tracker) watch(ctx context.Context, b *testing.B, c client.WithWatch, s stream, list client.ObjectList, namespace string) {
	b.Helper()
	w, err := c.Watch(ctx, list, client.InNamespace(namespace))
	if err != nil {
		b.Fatalf("failed to watch %s: %v", s, err)
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				t.observe(s, obj, ev.Type == watch.Deleted)
			}
			if ctx.Err() != nil {
				return
			}
			if w, err = c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(namespace)); err != nil {
				return
			}
		}
	}()
}

// observe records an object's new version (or its deletion) and evaluates
// the milestones.
func (t *tracker) observe(s stream, obj client.Object, deleted bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.objects[s]
	if m == nil {
		m = map[string]client.Object{}
		t.objects[s] = m
	}
	key := obj.GetNamespace() + "/" + obj.GetName()
	if deleted {
		delete(m, key)
	} else {
		m[key] = obj
	}
	t.evaluate()
}

// evaluate records the milestones that hold for the first time; the caller
// holds t.mu.
func (t *tracker) evaluate() {
	if t.done == nil {
		return
	}
	elapsed := time.Since(t.began)
	for _, ms := range t.milestones {
		if _, ok := t.reached[ms.name]; !ok && ms.test(view{t}) {
			t.reached[ms.name] = elapsed
		}
	}
	if len(t.reached) == len(t.milestones) {
		close(t.done)
		t.done = nil
	}
}

// measure starts a measurement of milestones: it runs act, then waits until
// every milestone held, and returns when each first held after act began.
func (t *tracker) measure(b *testing.B, timeout time.Duration, act func(), milestones ...milestone) map[string]time.Duration {
	b.Helper()
	done := make(chan struct{})
	reached := map[string]time.Duration{}
	t.mu.Lock()
	t.began, t.milestones, t.reached, t.done = time.Now(), milestones, reached, done
	t.mu.Unlock()
	act()
	t.mu.Lock()
	t.evaluate()
	t.mu.Unlock()
	select {
	case <-done:
	case <-time.After(timeout):
		t.mu.Lock()
		var missing []string
		for _, ms := range milestones {
			if _, ok := reached[ms.name]; !ok {
				missing = append(missing, ms.name)
			}
		}
		t.done = nil
		t.mu.Unlock()
		if t.onTimeout != nil {
			t.onTimeout()
		}
		b.Fatalf("milestones not reached within %s: %v", timeout, missing)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Duration, len(reached))
	for k, v := range reached {
		out[k] = v
	}
	return out
}

// Predicates over tracked objects.

// readyInstances counts the Instances with Ready=True.
func readyInstances(objs []client.Object) int {
	n := 0
	for _, o := range objs {
		if inst, ok := o.(*computev1alpha.Instance); ok && meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady) {
			n++
		}
	}
	return n
}

// claims counts the claims (in namespace ns of the quota plane) of Workload
// w's cell Instances, only the granted ones when granted is set.
func claims(v view, ns, w string, granted bool) int {
	n := 0
	for _, o := range v.of(cellInstances, computev1alpha.WorkloadNameLabel, w) {
		c, ok := v.named(projectClaims, ns, names.ResourceClaimName(o.GetName())).(*quotav1alpha1.ResourceClaim)
		if !ok || c == nil {
			continue
		}
		if !granted || meta.IsStatusConditionTrue(c.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted) {
			n++
		}
	}
	return n
}

// ungated counts the Instances without the Quota scheduling gate.
func ungated(objs []client.Object) int {
	n := 0
	for _, o := range objs {
		inst, ok := o.(*computev1alpha.Instance)
		if !ok {
			continue
		}
		if inst.Spec.Controller == nil || !slices.ContainsFunc(inst.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
			return g.Name == computev1alpha.QuotaSchedulingGate
		}) {
			n++
		}
	}
	return n
}

// deploymentsReady reports whether want deployments report ready ready
// replicas for their current generation.
func deploymentsReady(objs []client.Object, want int, ready int32) bool {
	if len(objs) != want {
		return false
	}
	for _, o := range objs {
		wd := o.(*computev1alpha.WorkloadDeployment)
		if wd.Status.ObservedGeneration != wd.Generation || wd.Status.ReadyReplicas != ready {
			return false
		}
	}
	return true
}

// instanceReady reports an Instance's Ready condition; nil objects are not
// ready.
func instanceReady(o client.Object) (bool, bool) {
	inst, ok := o.(*computev1alpha.Instance)
	if !ok || inst == nil {
		return false, false
	}
	return meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady), true
}

// deploymentReady reports a WorkloadDeployment's ready replicas; -1 when it
// is not tracked.
func deploymentReady(o client.Object) int32 {
	wd, ok := o.(*computev1alpha.WorkloadDeployment)
	if !ok || wd == nil {
		return -1
	}
	return wd.Status.ReadyReplicas
}

// bindings returns the Karmada ResourceBindings of the hub copies of
// Workload w.
func bindings(v view, w string) []*workv1alpha2.ResourceBinding {
	copies := map[string]bool{}
	for _, o := range v.of(hubDeployments, computev1alpha.WorkloadNameLabel, w) {
		copies[o.GetNamespace()+"/"+o.GetName()] = true
	}
	var out []*workv1alpha2.ResourceBinding
	for _, o := range v.t.objects[hubBindings] {
		rb, ok := o.(*workv1alpha2.ResourceBinding)
		if ok && rb.Spec.Resource.Kind == "WorkloadDeployment" && copies[rb.Namespace+"/"+rb.Spec.Resource.Name] {
			out = append(out, rb)
		}
	}
	return out
}

// bindingsHold reports whether want bindings of Workload w exist and all
// satisfy ok.
func bindingsHold(v view, w string, want int, ok func(*workv1alpha2.ResourceBinding) bool) bool {
	rbs := bindings(v, w)
	if len(rbs) != want {
		return false
	}
	for _, rb := range rbs {
		if !ok(rb) {
			return false
		}
	}
	return true
}

// bindingApplied reports whether Karmada has recorded the binding's Work
// as applied in its cluster.
func bindingApplied(rb *workv1alpha2.ResourceBinding) bool {
	return len(rb.Status.AggregatedStatus) > 0 && rb.Status.AggregatedStatus[0].Applied
}

// bindingReports reports whether the status Karmada collected from the
// binding's cluster shows ready ready replicas.
func bindingReports(ready int32) func(*workv1alpha2.ResourceBinding) bool {
	return func(rb *workv1alpha2.ResourceBinding) bool {
		if len(rb.Status.AggregatedStatus) == 0 || rb.Status.AggregatedStatus[0].Status == nil {
			return false
		}
		var st struct {
			ReadyReplicas int32 `json:"readyReplicas"`
		}
		return json.Unmarshal(rb.Status.AggregatedStatus[0].Status.Raw, &st) == nil && st.ReadyReplicas == ready
	}
}
