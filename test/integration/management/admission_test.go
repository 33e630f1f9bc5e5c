package management

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/webhook"
)

// setWorkloadWebhookPolicy sets the failure policy of compute's validating
// webhook of Workloads in plane, retrying conflicts.
func setWorkloadWebhookPolicy(g gomega.Gomega, plane string, policy admissionregistrationv1.FailurePolicyType) {
	g.Eventually(func() error {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := clients[plane].Get(context.Background(), client.ObjectKey{Name: webhook.DefaultConfigurationName}, cfg); err != nil {
			return err
		}
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == "validate.workloads.compute.datumapis.com" {
				cfg.Webhooks[i].FailurePolicy = &policy
			}
		}
		return clients[plane].Update(context.Background(), cfg)
	}, timeout, interval).Should(gomega.Succeed())
}

// TestAPlaneWithoutComputesAdmissionFederatesNothing (#39): a project plane
// whose API server lets Workloads through when compute's validating webhook
// does not answer (failurePolicy Ignore: as good as none, to whoever can
// make the webhook unreachable) gets none of its Workloads federated: the
// Workload's Progressing is False AdmissionNotEnforced saying what is
// missing, a Warning event says so, and no WorkloadDeployment is made.
// Once the webhook fails closed again, the Workload is federated.
func TestAPlaneWithoutComputesAdmissionFederatesNothing(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	setWorkloadWebhookPolicy(g, projectA, admissionregistrationv1.Ignore)
	restored := false
	t.Cleanup(func() {
		if !restored {
			setWorkloadWebhookPolicy(gomega.NewWithT(t), projectA, admissionregistrationv1.Fail)
		}
	})

	w := create(t, projectA, makeWorkload("unadmitted", ns).withPlacement("edge", 1, "DFW").build())
	g.Eventually(func(g gomega.Gomega) {
		c := meta.FindStatusCondition(getWorkload(g, projectA, w).Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).To(gomega.Equal(computev1alpha.ReasonAdmissionNotEnforced))
		g.Expect(c.Message).To(gomega.ContainSubstring("failurePolicy Ignore"))
	}, timeout, interval).Should(gomega.Succeed())
	g.Consistently(func(g gomega.Gomega) {
		g.Expect(deploymentsOf(g, projectA, w)).To(gomega.BeEmpty(), "a Workload of a plane without admission was federated")
	}, 2*time.Second, interval).Should(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		var evs eventsv1.EventList
		g.Expect(clients[projectA].List(ctx, &evs, client.InNamespace(ns))).To(gomega.Succeed())
		found := false
		for _, e := range evs.Items {
			found = found || (e.Reason == computev1alpha.ReasonAdmissionNotEnforced && e.Type == "Warning" &&
				e.Regarding.Name == w.Name && strings.Contains(e.Note, "register them"))
		}
		g.Expect(found).To(gomega.BeTrue(), "a Warning event AdmissionNotEnforced regarding the Workload")
	}, timeout, interval).Should(gomega.Succeed())

	t.Log("the webhook fails closed again: the Workload is federated")
	setWorkloadWebhookPolicy(g, projectA, admissionregistrationv1.Fail)
	restored = true
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(deploymentsOf(g, projectA, w)).To(gomega.HaveKey("DFW"))
		c := meta.FindStatusCondition(getWorkload(g, projectA, w).Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Reason).NotTo(gomega.Equal(computev1alpha.ReasonAdmissionNotEnforced))
	}, 30*time.Second, interval).Should(gomega.Succeed())
}
