package federation

import (
	"strings"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	t.Log("no status arrives while Karmada has not applied the copy's binding: Karmada is busy, the status is on its way, the copy is not asked for")
	g.Eventually(get(hubClient, hubNS, wd.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(Succeed())
	created := time.Now()
	g.Consistently(asked, 2*statusResyncAfter, interval).Should(BeEmpty())
	rb := bindingOf(t, hubNS, wd.Name)
	setBindingConditions(t, rb, metav1.ConditionTrue, metav1.ConditionFalse)
	g.Consistently(asked, 2*statusResyncAfter, interval).Should(BeEmpty())

	t.Log("the binding is scheduled and applied and still no status arrives: lost, asked for once the copy has lagged for the threshold")
	setBindingConditions(t, rb, metav1.ConditionTrue, metav1.ConditionTrue)
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

// bindingOf creates the ResourceBinding Karmada would make for hub copy
// name, without status.
func bindingOf(t *testing.T, hubNS, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: strings.ToLower(name + "-" + computev1alpha.WorkloadDeploymentKind)},
		Spec: workv1alpha2.ResourceBindingSpec{Resource: workv1alpha2.ObjectReference{
			APIVersion: computev1alpha.GroupVersion.String(), Kind: computev1alpha.WorkloadDeploymentKind, Namespace: hubNS, Name: name,
		}},
	}
	NewWithT(t).Expect(hubClient.Create(t.Context(), rb)).To(Succeed())
	return rb
}

// setBindingConditions writes the binding's Scheduled and FullyApplied
// conditions, as Karmada's scheduler and binding controller do.
func setBindingConditions(t *testing.T, rb *workv1alpha2.ResourceBinding, scheduled, applied metav1.ConditionStatus) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(hubClient.Get(t.Context(), client.ObjectKeyFromObject(rb), rb)).To(Succeed())
	meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: workv1alpha2.Scheduled, Status: scheduled, Reason: "Test"})
	meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: workv1alpha2.FullyApplied, Status: applied, Reason: "Test"})
	g.Expect(hubClient.Status().Update(t.Context(), rb)).To(Succeed())
}
