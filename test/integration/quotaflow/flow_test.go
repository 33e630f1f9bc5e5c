package quotaflow

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/quota"
)

func TestInstancesRunOnlyWithinTheirProjectsQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := newProject(t, 3, "40", "80Gi")
	p.newWD(t, "web", 5)

	// Three Instances fit: they are granted and released to the provider,
	// which runs them. The other two stay gated and say why.
	var granted, denied []string
	g.Eventually(func(g Gomega) {
		insts := p.instances(g)
		g.Expect(insts).To(HaveLen(5))
		granted, denied = split(insts)
		g.Expect(granted).To(HaveLen(3), "granted")
		g.Expect(denied).To(HaveLen(2), "denied")
		for _, inst := range insts {
			g.Expect(inst.Finalizers).To(ContainElement(computev1alpha.InstanceFinalizer))
			ready := condition(inst.Status.Conditions, computev1alpha.ConditionReady)
			if gated(&inst) {
				g.Expect(ready.Reason).To(Equal(computev1alpha.ReasonQuotaExceeded))
				g.Expect(condition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted).Message).
					To(ContainSubstring("requested 1 compute.datumapis.com/instances, 0 of 3 available"))
			} else {
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "instance %s runs", inst.Name)
			}
		}
	}, settle).Should(Succeed())

	// Every Instance has its claim in the project, labelled with the cell
	// and the cell namespace.
	g.Expect(p.claims(g)).To(HaveLen(5))
	for _, c := range p.claims(g) {
		g.Expect(c.Labels).To(HaveKeyWithValue(computev1alpha.SourceClusterLabel, cellName))
		g.Expect(c.Labels).To(HaveKeyWithValue(computev1alpha.InstanceNamespaceLabel, p.cellNS))
		g.Expect(c.Spec.ConsumerRef).To(Equal(quota.ProjectRef(p.name)))
	}

	// Deleting a granted Instance releases its claim, which admits the
	// first Instance in line; the replacement the deployment creates
	// queues behind it.
	gone := &computev1alpha.Instance{}
	g.Expect(cellKube.Get(ctx, client.ObjectKey{Namespace: p.cellNS, Name: granted[0]}, gone)).To(Succeed())
	oldClaim := &quotav1alpha1.ResourceClaim{}
	g.Expect(projectKube.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: "instance-" + gone.Name}, oldClaim)).To(Succeed())
	g.Expect(cellKube.Delete(ctx, gone)).To(Succeed())

	g.Eventually(func(g Gomega) {
		claim := &quotav1alpha1.ResourceClaim{}
		err := projectKube.Get(ctx, client.ObjectKeyFromObject(oldClaim), claim)
		if err == nil {
			g.Expect(claim.UID).NotTo(Equal(oldClaim.UID), "the deleted Instance's claim is released")
		} else {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}
		insts := p.instances(g)
		g.Expect(insts).To(HaveLen(5))
		nowGranted, nowDenied := split(insts)
		g.Expect(nowGranted).To(HaveLen(3))
		g.Expect(nowDenied).To(HaveLen(2))
		g.Expect(nowGranted).To(ContainElement(BeElementOf(denied)), "an Instance that waited is admitted")
		g.Expect(nowDenied).To(ContainElement(gone.Name), "the replacement waits")
		replacement := &computev1alpha.Instance{}
		g.Expect(cellKube.Get(ctx, client.ObjectKeyFromObject(gone), replacement)).To(Succeed())
		g.Expect(replacement.UID).NotTo(Equal(gone.UID))
	}, settle).Should(Succeed())
}
