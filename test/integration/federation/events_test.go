package federation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/controller/projector"
)

// cellEvent writes a hub event regarding hub Instance inst, labelled with
// city, as a cell's Pod event forwarder writes it.
func cellEvent(t *testing.T, inst *computev1alpha.Instance, name, city string) *corev1.Event {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: name, Labels: map[string]string{computev1alpha.CityCodeLabel: city}},
		InvolvedObject: corev1.ObjectReference{APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.InstanceKind,
			Namespace: inst.Namespace, Name: inst.Name, UID: inst.UID, FieldPath: "spec.containers{app}"},
		Reason: "BackOff", Message: "Back-off pulling image \"ghcr.io/citycells/hello:nope\"", Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := hubClient.Create(context.Background(), ev); err != nil {
		t.Fatalf("failed to write the hub event: %v", err)
	}
	return ev
}

// refusedEvents is compute_instance_events_refused_total for reason.
func refusedEvents(g Gomega, reason string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != projector.EventsRefusedMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelIs(m, "reason", reason) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// labelIs reports whether m has label name with value.
func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestACellsEventsOfAnInstanceReachItsProjection: a hub event regarding an
// Instance (a cell's Pod event) becomes an event of its projection in the
// project, and follows its count; an event labelled with another city than
// its Instance's (a cell writing about another city's Instance) is refused
// and counted, nothing projected.
func TestACellsEventsOfAnInstanceReachItsProjection(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	ensureNamespace(t, hubClient, hubNS, map[string]string{
		computev1alpha.UpstreamClusterNameLabel: "cluster-" + clusterName,
		computev1alpha.UpstreamNamespaceLabel:   ns,
	})
	wd := makeWD(ns, "web-dfw", "DFW", 1)
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	inst := makeInstance(hubNS, wd, "0")
	inst.Annotations = map[string]string{computev1alpha.SourceUIDAnnotation: "cell-uid-1"}
	g.Expect(hubClient.Create(ctx, inst)).To(Succeed())
	projection := &computev1alpha.Instance{}
	g.Eventually(get(projectClient, ns, inst.Name, projection), timeout, interval).Should(Succeed())

	t.Log("the cell's event reaches the project, regarding the projection")
	ev := cellEvent(t, inst, inst.Name+".pull", "DFW")
	projected := &corev1.Event{}
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: ev.Name}, projected)).To(Succeed())
		g.Expect(projected.InvolvedObject.UID).To(Equal(projection.UID))
		g.Expect(projected.InvolvedObject.Namespace).To(Equal(ns))
		g.Expect(projected.Reason).To(Equal("BackOff"))
		g.Expect(projected.Labels).To(HaveKeyWithValue(computev1alpha.CityCodeLabel, "DFW"))
	}, timeout, interval).Should(Succeed())

	t.Log("the cell counts it again: the one project event follows")
	ev.Count, ev.LastTimestamp = 5, metav1.NewTime(time.Now().Add(time.Second))
	g.Expect(hubClient.Update(ctx, ev)).To(Succeed())
	g.Eventually(func(g Gomega) int32 {
		g.Expect(projectClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: ev.Name}, projected)).To(Succeed())
		return projected.Count
	}, timeout, interval).Should(BeEquivalentTo(5))
	var list corev1.EventList
	g.Expect(projectClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == inst.Name && e.Reason == "BackOff" {
			n++
		}
	}
	g.Expect(n).To(Equal(1), "a repeated event is one event")

	t.Log("an event of DFW's Instance labelled LHR is refused, nothing projected")
	before := refusedEvents(g, projector.ReasonCityMismatch)
	forged := cellEvent(t, inst, inst.Name+".forged", "LHR")
	g.Eventually(func(g Gomega) float64 { return refusedEvents(g, projector.ReasonCityMismatch) }, timeout, interval).Should(BeNumerically(">", before))
	g.Consistently(gone(projectClient, ns, forged.Name, &corev1.Event{}), 2*time.Second, interval).Should(BeTrue())
}
