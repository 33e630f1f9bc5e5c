//go:build e2e

package compute

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/faults"
)

// failoverToleration is the shortest toleration the API admits.
const failoverToleration = 30 * time.Second

// withFailover gives the Workload's first placement a failover to
// fallbacks after the shortest toleration, returning 10 s after its city
// is back.
func (b *workloadBuilder) withFailover(fallbacks ...string) *workloadBuilder {
	f := &computev1alpha.PlacementFailover{
		TolerationSeconds:  ptr.To(int32(failoverToleration / time.Second)),
		ReturnAfterSeconds: ptr.To[int32](10),
	}
	for _, name := range fallbacks {
		f.Fallbacks = append(f.Fallbacks, computev1alpha.PlacementLocation{Name: name})
	}
	b.w.Spec.Placements[0].Failover = f
	return b
}

// fallbackDeployments lists a Workload's fallback deployments.
func fallbackDeployments(g Gomega, w *computev1alpha.Workload) []computev1alpha.WorkloadDeployment {
	var out []computev1alpha.WorkloadDeployment
	for _, wd := range deploymentsOf(g, w) {
		if wd.Labels[computev1alpha.FailoverForLabel] != "" {
			out = append(out, wd)
		}
	}
	return out
}

// replicaSampler counts, every 250 ms until stopped, a Workload's
// Instances in every cell (read from the cells directly, the partitioned
// one included) and in the reachable ones, keeping the largest total.
type replicaSampler struct {
	mu       sync.Mutex
	maxTotal int
	stop     chan struct{}
	done     chan struct{}
}

func sampleReplicas(ns projectNamespace, w *computev1alpha.Workload, reachable ...string) *replicaSampler {
	s := &replicaSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			total := 0
			for _, city := range cities {
				list := &computev1alpha.InstanceList{}
				if err := cells[city].List(context.Background(), list, client.InNamespace(ns.hub),
					client.MatchingLabels{computev1alpha.WorkloadNameLabel: w.Name}); err == nil {
					total += len(list.Items)
				}
			}
			s.mu.Lock()
			s.maxTotal = max(s.maxTotal, total)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *replicaSampler) max() int {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxTotal
}

// TestACityPartitionedPastItsTolerationFailsOverAndReturnsWithoutAFlap:
// two Workloads run a replica in DFW and in LHR with failover to SIN. LHR is
// partitioned past the toleration: each Workload's LHR replicas come up
// in SIN (the platform's failover rate spacing the two), nothing of LHR is
// deleted or recreated, and at no moment do more than desired + the
// failed-over replicas exist. After the heal LHR is Available again and
// the SIN replicas drain after the hold-down, LHR's Instances the same
// objects throughout. The figures are logged.
func TestACityPartitionedPastItsTolerationFailsOverAndReturnsWithoutAFlap(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	var ws []*computev1alpha.Workload
	for _, name := range []string{"north", "south"} {
		ws = append(ws, makeWorkload(ns.name, name).withPlacement("edge", 1, "DFW", "LHR").withFailover("sin").create(t))
	}
	for _, w := range ws {
		expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	}
	lhrBefore := map[string][]string{}
	for _, w := range ws {
		lhrBefore[w.Name] = uids(cellInstances(g, ns, w, "LHR"))
		g.Expect(lhrBefore[w.Name]).To(HaveLen(1))
	}
	sampler := sampleReplicas(ns, ws[0])

	t.Log("LHR is cut off past the toleration")
	g.Expect(local.Partition(ctx, "LHR", 0, faults.PartitionHang)).To(Succeed())
	cut := time.Now()
	healed := false
	defer func() {
		if !healed {
			_ = local.Heal(context.Background(), "LHR")
		}
	}()
	for _, w := range ws {
		g.Eventually(func(g Gomega) {
			fbs := fallbackDeployments(g, w)
			g.Expect(fbs).To(HaveLen(1))
			g.Expect(fbs[0].Spec.CityCode).To(Equal("SIN"))
			insts := instancesIn(g, cells["SIN"], ns.hub, fbs[0].Name)
			g.Expect(insts).To(HaveLen(1))
			for i := range insts {
				g.Expect(ready(&insts[i])).To(BeTrue())
			}
		}).WithTimeout(failoverToleration + chainWait).WithPolling(poll).Should(Succeed())
		t.Logf("%s: LHR's replica Available in SIN %s after the partition began (toleration %s; %s after it)", w.Name,
			time.Since(cut).Round(100*time.Millisecond), failoverToleration, (time.Since(cut) - failoverToleration).Round(100*time.Millisecond))
	}
	var created []time.Time
	for _, w := range ws {
		created = append(created, fallbackDeployments(g, w)[0].CreationTimestamp.Time)
	}
	gap := created[1].Sub(created[0]).Abs()
	t.Logf("the two Workloads' failovers were %s apart (the platform's rate: 0.5 Workloads a second); load average %s", gap, loadAverage())
	g.Expect(gap).To(BeNumerically(">=", time.Second), "the failover rate spaces Workloads")

	t.Log("the status says what happened; nothing of LHR is deleted or recreated")
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.Workload{}
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(ws[0]), cur)).To(Succeed())
		lhr := cityOf(cur, "edge", "LHR")
		g.Expect(lhr.Failover).NotTo(BeNil())
		g.Expect(lhr.Failover.Phase).To(Equal(computev1alpha.FailoverFailedOver))
		g.Expect(lhr.Failover.Message).To(ContainSubstring("1 replica(s) failed over to edge/SIN"))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionFailedOver)).To(BeTrue())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	out := newCLIUser(t, ns.name).run(0, "status", ws[0].Name, "--yes").Stdout
	expectContains(t, "status", out, "failed over to SIN")
	for _, w := range ws {
		g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(lhrBefore[w.Name]), "LHR's Instances of %s", w.Name)
	}

	t.Log("healed: LHR is Available again and the SIN replicas drain after the hold-down")
	g.Expect(local.Heal(ctx, "LHR")).To(Succeed())
	healed = true
	healedAt := time.Now()
	for _, w := range ws {
		g.Eventually(func(g Gomega) {
			g.Expect(fallbackDeployments(g, w)).To(BeEmpty())
			g.Expect(cityInstancesIn(g, cells["SIN"], ns.hub, w, "SIN")).To(BeEmpty())
		}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
		t.Logf("%s: the SIN replicas drained %s after the heal (hold-down 10s)", w.Name, time.Since(healedAt).Round(100*time.Millisecond))
		expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
		g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(lhrBefore[w.Name]), "LHR's Instances of %s", w.Name)
	}
	most := sampler.max()
	t.Logf("at most %d Instances of %s existed at any moment (desired 2 + 1 failed over); load average %s", most, ws[0].Name, loadAverage())
	g.Expect(most).To(BeNumerically("<=", 3))
	expectHealthy(t)
}

// TestAFlappingCityInsideTheTolerationNeverFailsOver partitions LHR three
// times for 10 s, 10 s apart: each heal restarts the toleration, so no
// fallback is ever created.
func TestAFlappingCityInsideTheTolerationNeverFailsOver(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "flappy").withPlacement("edge", 1, "LHR").withFailover("sin").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	before := uids(cellInstances(g, ns, w, "LHR"))
	for i := range 3 {
		g.Expect(local.Partition(ctx, "LHR", 10*time.Second, faults.PartitionHang)).To(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(fallbackDeployments(g, w)).To(BeEmpty())
		}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		t.Logf("flap %d: no failover", i+1)
	}
	g.Expect(local.Heal(ctx, "LHR")).To(Succeed())
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(before))
	expectHealthy(t)
}

// TestAFallbackThatRefusesTheReplicasHandsThemToTheNext: with the
// project's grant full, LHR's replica fails over to DFW, whose cell refuses
// it (QuotaExceeded); it moves to SIN, the last fallback, which keeps it and
// retries; raising the grant makes it Available there, and after the heal
// it drains.
func TestAFallbackThatRefusesTheReplicasHandsThemToTheNext(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	qc := quotaClient(t)
	grant := &quotav1alpha1.ResourceGrant{}
	g.Expect(qc.Get(ctx, defaultGrantKey(), grant)).To(Succeed())
	original := grant.DeepCopy()
	t.Cleanup(func() { setGrantedInstances(t, qc, grantedInstances(original)) })
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "spare").withPlacement("edge", 1, "LHR").withFailover("dfw", "sin").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	before := uids(cellInstances(g, ns, w, "LHR"))

	t.Log("the project's grant allows no more Instances; LHR is cut off past the toleration")
	setGrantedInstances(t, qc, 0)
	g.Expect(local.Partition(ctx, "LHR", 0, faults.PartitionHang)).To(Succeed())
	healed := false
	defer func() {
		if !healed {
			_ = local.Heal(context.Background(), "LHR")
		}
	}()
	cur := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		fbs := fallbackDeployments(g, w)
		g.Expect(fbs).To(HaveLen(1))
		g.Expect(fbs[0].Spec.CityCode).To(Equal("SIN"))
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		lhr := cityOf(cur, "edge", "LHR")
		g.Expect(lhr.Failover).NotTo(BeNil())
		g.Expect(lhr.Failover.Message).To(ContainSubstring("moved from edge/DFW"))
		g.Expect(lhr.Failover.Message).To(ContainSubstring("QuotaExceeded"))
	}).WithTimeout(failoverToleration + chainWait).WithPolling(poll).Should(Succeed())
	t.Logf("DFW refused LHR's replica; it moved to SIN: %s", cityOf(cur, "edge", "LHR").Failover.Message)

	t.Log("the grant is raised: the replica runs in SIN")
	setGrantedInstances(t, qc, grantedInstances(original))
	g.Eventually(func(g Gomega) {
		fbs := fallbackDeployments(g, w)
		g.Expect(fbs).To(HaveLen(1))
		insts := instancesIn(g, cells["SIN"], ns.hub, fbs[0].Name)
		g.Expect(insts).To(HaveLen(1))
		g.Expect(ready(&insts[0])).To(BeTrue())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("healed: the SIN replica drains, LHR's is the same object")
	g.Expect(local.Heal(ctx, "LHR")).To(Succeed())
	healed = true
	g.Eventually(func(g Gomega) {
		g.Expect(fallbackDeployments(g, w)).To(BeEmpty())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(before))
	expectHealthy(t)
}

// loadAverage is the machine's load average, printed beside the figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
