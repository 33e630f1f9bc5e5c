package federation

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/projector"
)

func TestAHubInstanceIsProjectedOnlyOnceItsOwnerExists(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	ensureNamespace(t, hubClient, hubNS, map[string]string{
		computev1alpha.UpstreamClusterNameLabel: "cluster-" + clusterName,
		computev1alpha.UpstreamNamespaceLabel:   ns,
	})
	wd := makeWD(ns, "web-dfw", "DFW", 1)

	t.Log("an Instance written back before its project WorkloadDeployment exists is not projected")
	inst := makeInstance(hubNS, wd, "0")
	inst.Annotations = map[string]string{computev1alpha.SourceUIDAnnotation: "cell-uid-1"}
	g.Expect(hubClient.Create(ctx, inst)).To(Succeed())
	setReady(t, hubClient, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)
	g.Consistently(gone(projectClient, ns, inst.Name, &computev1alpha.Instance{}), 3*time.Second, interval).Should(BeTrue())

	t.Log("once the WorkloadDeployment exists, the projection appears, owned by it, with labels, spec and status")
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	projection := &computev1alpha.Instance{}
	g.Eventually(get(projectClient, ns, inst.Name, projection), timeout, interval).Should(Succeed())
	owner := metav1.GetControllerOf(projection)
	g.Expect(owner).NotTo(BeNil())
	g.Expect(owner.UID).To(Equal(wd.UID))
	g.Expect(owner.Kind).To(Equal(computev1alpha.WorkloadDeploymentKind))
	g.Expect(projection.Labels).To(HaveKeyWithValue(computev1alpha.ProjectionLabel, "true"))
	g.Expect(projection.Labels).To(HaveKeyWithValue(computev1alpha.InstanceIndexLabel, "0"))
	g.Expect(projection.Spec).To(Equal(inst.Spec))
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(projection), projection)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(projection.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Log("an admin deletes the projection while its Instance runs: it is restored")
	deletedUID := projection.UID
	g.Expect(projectClient.Delete(ctx, projection)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(projection), projection)).To(Succeed())
		g.Expect(projection.UID).NotTo(Equal(deletedUID))
		g.Expect(meta.IsStatusConditionTrue(projection.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Log("a status change in the hub reaches the projection")
	setReady(t, hubClient, inst, metav1.ConditionFalse, computev1alpha.ReasonInstanceCrashing)
	g.Eventually(func(g Gomega) string {
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(projection), projection)).To(Succeed())
		return meta.FindStatusCondition(projection.Status.Conditions, computev1alpha.ConditionReady).Reason
	}, timeout, interval).Should(Equal(computev1alpha.ReasonInstanceCrashing))

	t.Log("the cell recreates the Instance: the project shows a new Instance (new uid, the new source), not the old one updated")
	firstUID := projection.UID
	g.Expect(hubClient.Delete(ctx, inst)).To(Succeed())
	again := makeInstance(hubNS, wd, "0")
	again.Annotations = map[string]string{computev1alpha.SourceUIDAnnotation: "cell-uid-2"}
	g.Expect(hubClient.Create(ctx, again)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(projection), projection)).To(Succeed())
		g.Expect(projection.UID).NotTo(Equal(firstUID))
		g.Expect(projection.Annotations).To(HaveKeyWithValue(computev1alpha.SourceUIDAnnotation, "cell-uid-2"))
	}, timeout, interval).Should(Succeed())
	t.Log("recreated once more by the cell: replaced again")
	secondUID := projection.UID
	third := again.DeepCopy()
	g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(again), third)).To(Succeed())
	patch := client.MergeFrom(third.DeepCopy())
	third.Annotations[computev1alpha.SourceUIDAnnotation] = "cell-uid-3"
	g.Expect(hubClient.Patch(ctx, third, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(projection), projection)).To(Succeed())
		g.Expect(projection.UID).NotTo(Equal(secondUID))
		g.Expect(projection.Annotations).To(HaveKeyWithValue(computev1alpha.SourceUIDAnnotation, "cell-uid-3"))
	}, timeout, interval).Should(Succeed())

	t.Log("the hub Instance is gone (the cell scaled down) while its owner stays: the project lists no ghost")
	g.Expect(hubClient.Delete(ctx, third)).To(Succeed())
	g.Eventually(gone(projectClient, ns, inst.Name, &computev1alpha.Instance{}), timeout, interval).Should(BeTrue())
	g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(wd), &computev1alpha.WorkloadDeployment{})).To(Succeed())
}

func TestAnUnresolvableHubInstanceIsReportedAndNotRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	hubNS := "unmapped-" + strings.ToLower(rand.String(5))
	ensureNamespace(t, hubClient, hubNS, nil)
	before := unresolvableCount(g, projector.ReasonNamespaceNotMapped)

	inst := makeInstance(hubNS, makeWD("x", "stray-dfw", "DFW", 1), "0")
	g.Expect(hubClient.Create(ctx, inst)).To(Succeed())

	t.Log("the hub Instance gets a ProjectionUnresolvable event and the metric counts it")
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(hubClient.List(ctx, list, client.InNamespace(hubNS))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Name == inst.Name {
				reasons = append(reasons, e.Reason)
			}
		}
		g.Expect(reasons).To(ContainElement(projector.EventProjectionUnresolvable))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) float64 { return unresolvableCount(g, projector.ReasonNamespaceNotMapped) }, timeout, interval).
		Should(BeNumerically(">", before))

	t.Log("and it is not retried while it does not change")
	settled := unresolvableCount(g, projector.ReasonNamespaceNotMapped)
	g.Consistently(func(g Gomega) float64 { return unresolvableCount(g, projector.ReasonNamespaceNotMapped) }, 3*time.Second, interval).
		Should(Equal(settled))
}

// unresolvableCount reads compute_projection_unresolvable_total{reason}.
func unresolvableCount(g Gomega, reason string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != projector.UnresolvableMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestAnInstanceForgedByAnotherCitysCellIsNotProjected (#38, hole 3): a
// cell writes back, labelled with its own city (DFW) as the hub's
// isolation policy makes it, an Instance claiming LHR's WorkloadDeployment.
// The projector refuses it — nothing in the project, a
// ProjectionUnresolvable event naming both cities, the CityMismatch count —
// while LHR's own Instance of that deployment is projected.
func TestAnInstanceForgedByAnotherCitysCellIsNotProjected(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	ensureNamespace(t, hubClient, hubNS, map[string]string{
		computev1alpha.UpstreamClusterNameLabel: "cluster-" + clusterName,
		computev1alpha.UpstreamNamespaceLabel:   ns,
	})
	wd := makeWD(ns, "web-lhr", "LHR", 2)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	before := unresolvableCount(g, projector.ReasonCityMismatch)

	forged := makeInstance(hubNS, wd, "1")
	forged.Labels[computev1alpha.CityCodeLabel] = "DFW"
	g.Expect(hubClient.Create(ctx, forged)).To(Succeed())
	own := makeInstance(hubNS, wd, "0")
	g.Expect(hubClient.Create(ctx, own)).To(Succeed())

	t.Log("LHR's own Instance is projected")
	g.Eventually(get(projectClient, ns, own.Name, &computev1alpha.Instance{}), timeout, interval).Should(Succeed())
	t.Log("the forged one is refused, said and counted, and never projected")
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(hubClient.List(ctx, list, client.InNamespace(hubNS))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == forged.Name && e.Reason == projector.EventProjectionUnresolvable {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement(And(HavePrefix(projector.ReasonCityMismatch+": "),
			ContainSubstring(`written back as city "DFW"`), ContainSubstring("is of city LHR"))))
	}, timeout, interval).Should(Succeed())
	g.Expect(unresolvableCount(g, projector.ReasonCityMismatch)).To(BeNumerically(">", before))
	g.Consistently(gone(projectClient, ns, forged.Name, &computev1alpha.Instance{}), 3*time.Second, interval).Should(BeTrue())
}
