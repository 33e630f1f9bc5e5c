//go:build e2e

package compute

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/standin/quotaservice"
)

// quotaClient returns a client of the project plane that also knows the
// quota kinds compute-quota serves there.
func quotaClient(t *testing.T) client.Client {
	t.Helper()
	s := scheme()
	if err := quotav1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(local.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("failed to create a quota client of the project plane: %v", err)
	}
	return c
}

// setGrantedInstances sets the Instances the project's default grant
// allows, retrying conflicts with compute-quota's status writes.
func setGrantedInstances(t *testing.T, c client.Client, n int64) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		grant := &quotav1alpha1.ResourceGrant{}
		g.Expect(c.Get(context.Background(), defaultGrantKey(), grant)).To(Succeed())
		i := slices.IndexFunc(grant.Spec.Allowances, func(a quotav1alpha1.Allowance) bool {
			return a.ResourceType == computev1alpha.ResourceTypeInstances
		})
		g.Expect(i).NotTo(Equal(-1), "the default grant allows instances")
		grant.Spec.Allowances[i].Buckets = []quotav1alpha1.Bucket{{Amount: n}}
		g.Expect(c.Update(context.Background(), grant)).To(Succeed())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

// defaultGrantKey names the grant compute-quota makes for the platform's
// project.
func defaultGrantKey() client.ObjectKey {
	return client.ObjectKey{Namespace: quotaservice.DefaultGrantNamespace, Name: quotaservice.DefaultGrantName}
}

func TestAWorkloadOverQuotaShowsQuotaExceededPerCityAndRecoversWhenTheGrantIsRaised(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	qc := quotaClient(t)
	grant := &quotav1alpha1.ResourceGrant{}
	g.Expect(qc.Get(ctx, defaultGrantKey(), grant)).To(Succeed(), "compute-quota made the project's default grant")
	original := grant.DeepCopy()
	t.Cleanup(func() {
		NewWithT(t).Eventually(func(g Gomega) {
			cur := &quotav1alpha1.ResourceGrant{}
			g.Expect(qc.Get(context.Background(), defaultGrantKey(), cur)).To(Succeed())
			cur.Spec.Allowances = original.Spec.Allowances
			g.Expect(qc.Update(context.Background(), cur)).To(Succeed())
		}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	})

	t.Log("the project's grant allows no more Instances")
	setGrantedInstances(t, qc, 0)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "capped").withPlacement("edge", 1, "DFW", "LHR").create(t)

	t.Log("the Workload is not available, and each city says its quota is exceeded")
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		available := meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available).NotTo(BeNil())
		g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(available.Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
		for _, city := range []string{"DFW", "LHR"} {
			cs := cityOf(got, "edge", city)
			g.Expect(cs).NotTo(BeNil(), "city %s is reported", city)
			g.Expect(cs.Available).To(BeFalse())
			g.Expect(cs.Reason).To(Equal(computev1alpha.ReasonQuotaExceeded), "city %s", city)
			g.Expect(cs.Message).To(ContainSubstring("quota exceeded"), "city %s", city)
		}
		g.Expect(got.Status.ReadyReplicas).To(BeZero())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("each cell's Instance is still held by its Quota gate, with its claim denied in the project")
	g.Eventually(func(g Gomega) {
		for _, wd := range deploymentsOf(g, w) {
			insts := instancesIn(g, cells[wd.Spec.CityCode], ns.hub, wd.Name)
			g.Expect(insts).To(HaveLen(1))
			q := meta.FindStatusCondition(insts[0].Status.Conditions, computev1alpha.ConditionQuotaGranted)
			g.Expect(q).NotTo(BeNil())
			g.Expect(q.Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
			g.Expect(insts[0].Spec.Controller.SchedulingGates).To(ContainElement(
				computev1alpha.SchedulingGate{Name: computev1alpha.QuotaSchedulingGate}))
			claim := &quotav1alpha1.ResourceClaim{}
			g.Expect(qc.Get(ctx, client.ObjectKey{Namespace: ns.name, Name: "instance-" + insts[0].Name}, claim)).To(Succeed())
			g.Expect(claim.Labels).To(HaveKeyWithValue(computev1alpha.SourceClusterLabel, platform.CellPlane(wd.Spec.CityCode)))
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("raising the grant admits both Instances and the Workload becomes available")
	setGrantedInstances(t, qc, grantedInstances(original)+2)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
}

// grantedInstances returns the Instances a grant allows.
func grantedInstances(g *quotav1alpha1.ResourceGrant) int64 {
	var n int64
	for _, a := range g.Spec.Allowances {
		if a.ResourceType != computev1alpha.ResourceTypeInstances {
			continue
		}
		for _, b := range a.Buckets {
			n += b.Amount
		}
	}
	return n
}
