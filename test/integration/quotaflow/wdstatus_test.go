package quotaflow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// statusWrite is one version of a WorkloadDeployment's status as a watch
// saw it.
type statusWrite struct {
	at     time.Duration
	status computev1alpha.WorkloadDeploymentStatus
}

// recordStatusWrites watches the WorkloadDeployments of a namespace and
// sends every version whose status differs from the one before, until ctx
// ends. ready is closed once the watch is open.
func recordStatusWrites(ctx context.Context, t *testing.T, ns string, start time.Time, ready chan<- struct{}, out chan<- statusWrite) {
	defer close(out)
	w, err := cellKube.Watch(ctx, &computev1alpha.WorkloadDeploymentList{}, client.InNamespace(ns))
	close(ready)
	if err != nil {
		t.Errorf("failed to watch WorkloadDeployments: %v", err)
		return
	}
	defer w.Stop()
	var last *computev1alpha.WorkloadDeploymentStatus
	for ev := range w.ResultChan() {
		wd, ok := ev.Object.(*computev1alpha.WorkloadDeployment)
		if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
			continue
		}
		if last != nil && equalStatus(last, &wd.Status) {
			continue
		}
		last = wd.Status.DeepCopy()
		out <- statusWrite{at: time.Since(start), status: *last}
	}
}

// equalStatus reports whether two statuses serialise the same.
func equalStatus(a, b *computev1alpha.WorkloadDeploymentStatus) bool {
	return describeChange(a, b) == ""
}

// describeChange names what changed from one status to the next: the
// generation, the counts, and each condition's status, reason, message and
// transition time.
func describeChange(prev, cur *computev1alpha.WorkloadDeploymentStatus) string {
	var parts []string
	if prev == nil {
		prev = &computev1alpha.WorkloadDeploymentStatus{}
	}
	if prev.ObservedGeneration != cur.ObservedGeneration {
		parts = append(parts, fmt.Sprintf("observedGeneration %d", cur.ObservedGeneration))
	}
	if prev.ReplicaCounts != cur.ReplicaCounts {
		c := cur.ReplicaCounts
		parts = append(parts, fmt.Sprintf("counts replicas=%d updated=%d current=%d ready=%d", c.Replicas, c.UpdatedReplicas, c.CurrentReplicas, c.ReadyReplicas))
	}
	if prev.TemplateHash != cur.TemplateHash || prev.Selector != cur.Selector || !equalLocation(prev.Location, cur.Location) {
		parts = append(parts, "templateHash/selector/location")
	}
	for _, c := range cur.Conditions {
		o := meta.FindStatusCondition(prev.Conditions, c.Type)
		if o == nil {
			parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
			continue
		}
		switch {
		case o.Status != c.Status || o.Reason != c.Reason:
			parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		case o.Message != c.Message:
			parts = append(parts, fmt.Sprintf("%s message %q", c.Type, c.Message))
		case !o.LastTransitionTime.Equal(&c.LastTransitionTime) || o.ObservedGeneration != c.ObservedGeneration:
			parts = append(parts, fmt.Sprintf("%s transition time or generation only", c.Type))
		}
	}
	return strings.Join(parts, "; ")
}

func equalLocation(a, b *computev1alpha.LocationReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestAWorkloadDeploymentsStatusOnItsWayToReady(t *testing.T) {
	g := NewWithT(t)
	p := newProject(t, 10, "40", "80Gi")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	ready, writes := make(chan struct{}), make(chan statusWrite, 100)
	go recordStatusWrites(ctx, t, p.cellNS, start, ready, writes)
	<-ready
	wd := p.newWD(t, "web", 2)

	var seen []statusWrite
	g.Eventually(func(g Gomega) {
		for {
			select {
			case w := <-writes:
				seen = append(seen, w)
				continue
			default:
			}
			break
		}
		g.Expect(seen).NotTo(BeEmpty())
		last := seen[len(seen)-1].status
		g.Expect(last.ReplicaCounts.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(meta.IsStatusConditionTrue(last.Conditions, computev1alpha.ConditionReplicasReady)).To(BeTrue())
	}, settle).WithPolling(10 * time.Millisecond).Should(Succeed())
	// Anything written after Ready.
	time.Sleep(2 * time.Second)
	cancel()
	for w := range writes {
		seen = append(seen, w)
	}
	var prev *computev1alpha.WorkloadDeploymentStatus
	for i, w := range seen {
		t.Logf("write %d at %s: %s", i+1, w.at.Round(time.Millisecond), describeChange(prev, &w.status))
		prev = &seen[i].status
	}
	_ = wd
}
