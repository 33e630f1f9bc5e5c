package quota_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/clitest"
)

// TestACellsClaimWaitsForItsCityToBeBound: a claim of cell-sin in a
// namespace that binds only DFW is refused, saying so, and takes nothing;
// once the project binds SIN there, the shared quota service evaluates it
// again without any change to the claim and grants it (the time is
// logged). A claim no cell made, in the same namespace, is not judged.
func TestACellsClaimWaitsForItsCityToBeBound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	project := uniqueName("p-bind")
	ensureNamespace(t, quotaKube, project, nil)
	g.Expect(clitest.BindCities(ctx, quotaKube, project, "DFW")).To(Succeed())
	createGrant(t, quotaKube, project, "grant", project, 5, "40", "80Gi")

	sin := newClaim(project, "instance-web-sin-0", project)
	sin.Labels = map[string]string{computev1alpha.SourceClusterLabel: "cell-sin"}
	unlabelled := newClaim(project, "instance-admin-0", project)
	g.Expect(quotaKube.Create(ctx, sin)).To(Succeed())
	g.Expect(quotaKube.Create(ctx, unlabelled)).To(Succeed())

	granted := func(c *quotav1alpha1.ResourceClaim) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			got := &quotav1alpha1.ResourceClaim{}
			g.Expect(quotaKube.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
			g.Expect(cond).NotTo(BeNil())
			return cond
		}
	}
	g.Eventually(granted(unlabelled), settleTimeout, poll).Should(HaveField("Reason", quotav1alpha1.ResourceClaimReasonQuotaAvailable))
	g.Eventually(granted(sin), settleTimeout, poll).Should(And(
		HaveField("Reason", quotav1alpha1.ResourceClaimReasonValidationFailed),
		HaveField("Message", ContainSubstring("refused: cell cell-sin serves city SIN, and namespace "+project+" binds no Location of that city (bound: DFW)")),
	))
	g.Expect(bucketsOf(ctx, quotaKube, project)).To(HaveKeyWithValue(computev1alpha.ResourceTypeInstances,
		HaveField("Allocated", int64(1))), "the refused claim takes no quota")

	began := time.Now()
	g.Expect(clitest.BindCities(ctx, quotaKube, project, quotaservice.CellCity("cell-sin"))).To(Succeed())
	g.Eventually(granted(sin), settleTimeout, poll).Should(HaveField("Reason", quotav1alpha1.ResourceClaimReasonQuotaAvailable))
	t.Logf("cell-sin's claim granted %s after SIN was bound", time.Since(began).Round(time.Millisecond))
}
