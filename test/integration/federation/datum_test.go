package federation

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/integration/fixtures"
)

func TestADatumShapedDeploymentAndItsInstancesAreCarriedUntouched(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	wd := makeWD(ns, "datum-dfw", "DFW", 1)
	wd.Spec.Template = fixtures.DatumTemplate()
	wd.Spec.ScaleSettings = fixtures.DatumScaleSettings()
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())

	t.Log("the hub copy carries the template and the metrics untouched, and why its referenced data cannot be delivered yet")
	hubWD := &computev1alpha.WorkloadDeployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: wd.Name}, hubWD)).To(Succeed())
		g.Expect(hubWD.Annotations).To(HaveKeyWithValue(computev1alpha.ReferencedDataErrorAnnotation, ContainSubstring("SourceNotFound")))
	}, timeout, interval).Should(Succeed())
	g.Expect(fixtures.Diff(wd.Spec, hubWD.Spec)).To(BeEmpty())

	t.Log("once the objects exist, the hub copy names what its cell must hold, and the error is gone")
	g.Expect(projectClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: ns},
		StringData: map[string]string{"password": "s3cret"}})).To(Succeed())
	g.Expect(projectClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: ns}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(hubWD), hubWD)).To(Succeed())
		g.Expect(hubWD.Annotations).To(HaveKeyWithValue(computev1alpha.ReferencedDataErrorAnnotation, ""))
		g.Expect(hubWD.Annotations).To(HaveKeyWithValue(computev1alpha.ExpectedReferencedDataAnnotation, ContainSubstring("Secret/db-creds")))
	}, timeout, interval).Should(Succeed())

	t.Log("the cell Instance made from it is written back and projected with the same spec")
	ensureNamespace(t, cellClient, hubNS, nil)
	cellWD := makeWD(hubNS, wd.Name, "DFW", 1)
	cellWD.Spec = *hubWD.Spec.DeepCopy()
	g.Expect(cellClient.Create(ctx, cellWD)).To(Succeed())
	inst := makeInstance(hubNS, cellWD, "0")
	inst.Spec = *cellWD.Spec.Template.Spec.DeepCopy()
	inst.Spec.Location = &computev1alpha.LocationReference{Namespace: "datum-locations", Name: "dfw"}
	inst.Spec.Controller = &computev1alpha.InstanceController{TemplateHash: "h1"}
	g.Expect(cellClient.Create(ctx, inst)).To(Succeed())
	setReady(t, cellClient, inst, metav1.ConditionTrue, computev1alpha.ReasonAvailable)

	back := &computev1alpha.Instance{}
	g.Eventually(get(hubClient, hubNS, inst.Name, back), timeout, interval).Should(Succeed())
	g.Expect(fixtures.Diff(inst.Spec, back.Spec)).To(BeEmpty())

	projection := &computev1alpha.Instance{}
	g.Eventually(func(g Gomega) {
		g.Expect(projectClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: inst.Name}, projection)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(projection.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(fixtures.Diff(inst.Spec, projection.Spec)).To(BeEmpty())
	template := projection.Spec.DeepCopy()
	template.Location, template.Controller = nil, nil
	g.Expect(fixtures.Diff(fixtures.DatumTemplate().Spec, *template)).To(BeEmpty(), "the projected Instance differs from the Workload template")
}
