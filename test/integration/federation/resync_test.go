package federation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	fedcontroller "github.com/citycells/compute/internal/controller/federation"
)

// TestAStatusKarmadaLostIsAskedForAgainUntilItArrives plays a Karmada that
// lost a member's status (docs/faults.md, "Karmada after an etcd loss"):
// the hub copy's status never describes its generation. The federator asks
// for it again by touching the copy, and again after the interval, and
// stops once the status has arrived.
func TestAStatusKarmadaLostIsAskedForAgainUntilItArrives(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "web-lhr", "LHR", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	key := client.ObjectKey{Namespace: hubNS, Name: wd.Name}
	asked := func(g Gomega) string {
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(hubClient.Get(ctx, key, cur)).To(Succeed())
		return cur.Annotations[fedcontroller.StatusResyncAnnotation]
	}

	t.Log("no status arrives on the copy: it is left alone for the threshold, then asked for")
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())
	created := time.Now()
	g.Eventually(asked, timeout, interval).ShouldNot(BeEmpty())
	g.Expect(time.Since(created)).To(BeNumerically(">=", statusResyncAfter-time.Second), "asked before the threshold")
	first := asked(g)

	t.Log("still nothing: asked for again, no sooner than the interval")
	g.Eventually(asked, timeout, interval).ShouldNot(Equal(first))
	second, err := time.Parse(time.RFC3339, asked(g))
	g.Expect(err).NotTo(HaveOccurred())
	firstAt, err := time.Parse(time.RFC3339, first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Sub(firstAt)).To(BeNumerically(">=", statusResyncAfter-time.Second))

	t.Log("the status arrives: the project shows it and the copy is not asked for again")
	reportOnHub(t, hubNS, wd.Name, 2, 2)
	g.Eventually(func(g Gomega) {
		cur := projectWD(g, wd)
		g.Expect(cur.Status.ReadyReplicas).To(Equal(int32(2)))
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	}, timeout, interval).Should(Succeed())
	last := asked(g)
	g.Consistently(asked, 3*statusResyncAfter, interval).Should(Equal(last))
}
