//go:build e2e

package compute

import (
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
)

// TestAFrozenCellAPIServerIsSeenInSeconds freezes LHR's kube-apiserver
// (SIGSTOP) while LHR's compute-manager still reaches the hub. The cell's
// heartbeat is renewed only while its own API server answers, so the
// Workload reports LHR stale within seconds (the time is logged; the
// Lease lasts 6 s), its Instance is neither deleted nor recreated in any
// plane, and once the API server runs again LHR is fresh again and stays
// so.
func TestAFrozenCellAPIServerIsSeenInSeconds(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "frozen").withPlacement("edge", 1, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	before := projectionsOf(g, ns, w, "LHR")
	g.Expect(before).To(HaveLen(1))

	apiserver := "kube-apiserver-" + platform.CellPlane("LHR")
	pid := componentPID(t, apiserver)
	g.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
	frozen := time.Now()
	thawed := false
	defer func() {
		if !thawed {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	cur := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		lhr := cityOf(cur, "edge", "LHR")
		g.Expect(lhr).NotTo(BeNil())
		g.Expect(lhr.Stale).To(BeTrue(), "LHR is not stale: %s %s", lhr.Reason, lhr.Message)
		g.Expect(lhr.Available).To(BeFalse())
		g.Expect(cityOf(cur, "edge", "DFW").Stale).To(BeFalse())
	}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	t.Logf("LHR stale %s after its kube-apiserver froze (heartbeat every 2 s, lease 6 s, probe timeout 1 s; load %s)",
		time.Since(frozen).Round(100*time.Millisecond), loadAverage())

	g.Expect(syscall.Kill(pid, syscall.SIGCONT)).To(Succeed())
	thawed = true
	thawedAt := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		g.Expect(cityOf(cur, "edge", "LHR").Stale).To(BeFalse())
		g.Expect(cityOf(cur, "edge", "LHR").Available).To(BeTrue())
	}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	t.Logf("LHR fresh again %s after its kube-apiserver ran again", time.Since(thawedAt).Round(100*time.Millisecond))
	g.Consistently(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		g.Expect(cityOf(cur, "edge", "LHR").Stale).To(BeFalse(), "LHR flapped back to stale")
	}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
	after := projectionsOf(g, ns, w, "LHR")
	g.Expect(uids(after)).To(Equal(uids(before)), "LHR's Instance was deleted or recreated")
}
