package quotaflow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/workloaddeployment"
	"github.com/citycells/compute/internal/status"
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

// TestAWorkloadDeploymentsStatusIsWrittenInFewSteps follows one cell
// WorkloadDeployment of two replicas from its creation to both Instances
// Ready, with real quota, and logs every status it was seen with and what
// changed. The generation it observes and the desired state are written at
// once; the progress between them is held back and written together, so a
// progress-only write never follows the one before it sooner than about
// the interval; and no write changes nothing a reader could see.
func TestAWorkloadDeploymentsStatusIsWrittenInFewSteps(t *testing.T) {
	g := NewWithT(t)
	p := newProject(t, 10, "40", "80Gi")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	ready, writes := make(chan struct{}), make(chan statusWrite, 100)
	go recordStatusWrites(ctx, t, p.cellNS, start, ready, writes)
	<-ready
	p.newWD(t, "web", 2)

	var seen []statusWrite
	g.Eventually(func(g Gomega) {
		for drained := false; !drained; {
			select {
			case w := <-writes:
				seen = append(seen, w)
			default:
				drained = true
			}
		}
		g.Expect(seen).NotTo(BeEmpty())
		g.Expect(desired(&seen[len(seen)-1].status)).To(BeTrue(), "both replicas ready")
	}, settle).WithPolling(10 * time.Millisecond).Should(Succeed())
	// Nothing is written once it is Ready: let a stray write show.
	time.Sleep(2 * workloaddeployment.StatusInterval)
	cancel()
	for w := range writes {
		seen = append(seen, w)
	}

	// The first version seen is the one created, with no status.
	g.Expect(seen[0].status.ObservedGeneration).To(BeZero())
	versions := seen[1:]
	var prev *computev1alpha.WorkloadDeploymentStatus
	for i, w := range versions {
		t.Logf("status write %d at %s: %s", i+1, w.at.Round(time.Millisecond), describeChange(prev, &w.status))
		prev = &versions[i].status
	}
	g.Expect(versions).NotTo(BeEmpty())
	g.Expect(versions[0].status.ObservedGeneration).To(Equal(int64(1)), "the first status written observes the generation")
	g.Expect(desired(&versions[len(versions)-1].status)).To(BeTrue(), "the last status written is the desired state")
	for i := 1; i < len(versions); i++ {
		before, after := &versions[i-1].status, &versions[i].status
		g.Expect(visible(before, after)).To(BeTrue(), "status write %d changes something visible", i+1)
		if progressOnly(before, after) {
			g.Expect(versions[i].at-versions[i-1].at).To(BeNumerically(">=", workloaddeployment.StatusInterval/2),
				"status write %d only reports progress: it was held back", i+1)
		}
	}
}

// desired reports whether a status says both replicas are ready.
func desired(s *computev1alpha.WorkloadDeploymentStatus) bool {
	return s.ReadyReplicas == 2 && meta.IsStatusConditionTrue(s.Conditions, computev1alpha.ConditionReplicasReady)
}

// visible reports whether a status differs from the one before in more
// than transition times.
func visible(before, after *computev1alpha.WorkloadDeploymentStatus) bool {
	d := describeChange(before, after)
	for _, part := range strings.Split(d, "; ") {
		if !strings.HasSuffix(part, "transition time or generation only") {
			return true
		}
	}
	return false
}

// progressOnly reports whether a status change only reports progress: the
// same generation, the desired state neither reached nor left, no
// availability lost and no failure on either side.
func progressOnly(before, after *computev1alpha.WorkloadDeploymentStatus) bool {
	if before.ObservedGeneration != after.ObservedGeneration || desired(before) || desired(after) {
		return false
	}
	b := meta.FindStatusCondition(before.Conditions, computev1alpha.ConditionAvailable)
	a := meta.FindStatusCondition(after.Conditions, computev1alpha.ConditionAvailable)
	if b == nil || a == nil {
		return false
	}
	return (b.Status != metav1.ConditionTrue || a.Status == metav1.ConditionTrue) && !status.Failing(b.Reason) && !status.Failing(a.Reason)
}
