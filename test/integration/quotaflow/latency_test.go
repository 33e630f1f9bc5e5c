package quotaflow

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// latencyInstances is how many Instances each measurement covers.
const latencyInstances = 32

// grantClock records, from watches of both planes, when each Instance's
// claim was first seen granted and when the Instance was first seen without
// its Quota gate.
type grantClock struct {
	mu      sync.Mutex
	granted map[string]time.Time
	ungated map[string]time.Time
	cancel  context.CancelFunc
}

// startGrantClock watches the project's claims and Instances until the test
// ends.
func startGrantClock(t *testing.T, p *project) *grantClock {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gc := &grantClock{granted: map[string]time.Time{}, ungated: map[string]time.Time{}, cancel: cancel}
	t.Cleanup(cancel)
	claimsReady, instsReady := make(chan struct{}), make(chan struct{})
	go gc.record(ctx, projectKube, &quotav1alpha1.ResourceClaimList{}, p.namespace, claimsReady, func(obj client.Object) (string, bool) {
		c, ok := obj.(*quotav1alpha1.ResourceClaim)
		if !ok || c.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(c.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted) {
			return "", false
		}
		return strings.TrimPrefix(c.Name, "instance-"), true
	}, gc.granted)
	go gc.record(ctx, cellKube, &computev1alpha.InstanceList{}, p.cellNS, instsReady, func(obj client.Object) (string, bool) {
		i, ok := obj.(*computev1alpha.Instance)
		if !ok || i.DeletionTimestamp != nil || gated(i) {
			return "", false
		}
		return i.Name, true
	}, gc.ungated)
	<-claimsReady
	<-instsReady
	return gc
}

// record notes the first time each object of a namespace matches. A watch
// the server ends is resumed from the last resourceVersion seen, so no
// event is lost; ready is closed once the first watch is open.
func (gc *grantClock) record(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, ready chan struct{},
	match func(client.Object) (string, bool), into map[string]time.Time) {
	rv := ""
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if ready != nil {
			close(ready)
			ready = nil
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			obj, ok := ev.Object.(client.Object)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				if ev.Type == watch.Error {
					rv = "" // expired: start over from the current state
				}
				continue
			}
			rv = obj.GetResourceVersion()
			name, ok := match(obj)
			if !ok {
				continue
			}
			gc.mu.Lock()
			if _, seen := into[name]; !seen {
				into[name] = now
			}
			gc.mu.Unlock()
		}
		w.Stop()
	}
}

// latencies returns, sorted, the time from grant to gate removal of every
// Instance seen both granted and ungated.
func (gc *grantClock) latencies() []time.Duration {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var out []time.Duration
	for name, granted := range gc.granted {
		if ungated, ok := gc.ungated[name]; ok {
			out = append(out, ungated.Sub(granted))
		}
	}
	slices.Sort(out)
	return out
}

// percentile returns the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

// waitUngated waits until every Instance of the project has lost its gate
// and the clock has seen each grant and gate removal.
func waitUngated(t *testing.T, p *project, gc *grantClock, n int) []time.Duration {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		insts := p.instances(g)
		g.Expect(insts).To(HaveLen(n))
		granted, _ := split(insts)
		g.Expect(granted).To(HaveLen(n))
		gc.mu.Lock()
		seenGranted, seenUngated := len(gc.granted), len(gc.ungated)
		gc.mu.Unlock()
		g.Expect(gc.latencies()).To(HaveLen(n), "claims seen granted: %d, Instances seen ungated: %d", seenGranted, seenUngated)
	}, 2*settle).Should(Succeed())
	return gc.latencies()
}

// report logs the figures of one measurement.
func report(t *testing.T, what string, l []time.Duration) {
	t.Helper()
	t.Logf("grant → Quota gate removal, %s: n=%d p50=%s p99=%s min=%s max=%s",
		what, len(l), percentile(l, 50).Round(time.Millisecond), percentile(l, 99).Round(time.Millisecond),
		l[0].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond))
}

// TestTimeFromGrantToGateRemoval measures, over many Instances, how long the
// cell takes to release an Instance once its claim is granted: through the
// claim watch, not the requeue schedule. It reports figures and asserts
// only the outcome.
func TestTimeFromGrantToGateRemoval(t *testing.T) {
	t.Run("claims granted as they arrive", func(t *testing.T) {
		p := newProject(t, latencyInstances, "64", "128Gi")
		gc := startGrantClock(t, p)
		p.newWD(t, "burst", latencyInstances)
		report(t, "granted on arrival", waitUngated(t, p, gc, latencyInstances))
	})
	t.Run("denied claims admitted by raising the grant", func(t *testing.T) {
		p := newProject(t, 0, "64", "128Gi")
		p.newWD(t, "held", latencyInstances)
		NewWithT(t).Eventually(func(g Gomega) {
			_, denied := split(p.instances(g))
			g.Expect(denied).To(HaveLen(latencyInstances))
		}, 2*settle).Should(Succeed())
		gc := startGrantClock(t, p)
		p.setGrant(t, latencyInstances, "64", "128Gi")
		report(t, "admitted by a grant raise", waitUngated(t, p, gc, latencyInstances))
	})
}
