package cell

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/integration/fixtures"
)

func TestADatumShapedTemplateReachesTheInstanceUntouchedWithTheCellsLocation(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	b := makeWD(ns, "datum")
	b.wd.Spec.Template = fixtures.DatumTemplate()
	b.wd.Spec.ScaleSettings = fixtures.DatumScaleSettings()
	wd := b.create(t)

	t.Log("the Instance's spec is the template's, field for field, plus the cell's Location and the controller settings")
	var inst computev1alpha.Instance
	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(1))
		inst = insts[0]
	}).Should(Succeed())
	got := inst.Spec.DeepCopy()
	g.Expect(got.Location).To(Equal(&cellLocation))
	g.Expect(got.Controller).NotTo(BeNil())
	got.Location, got.Controller = nil, nil
	if diff := fixtures.Diff(wd.Spec.Template.Spec, *got); diff != "" {
		t.Fatalf("the cell Instance's spec differs from the template (-template +instance):\n%s", diff)
	}
	g.Expect(inst.Labels).To(HaveKeyWithValue("app", "datum"))
	g.Expect(inst.Annotations).To(HaveKeyWithValue("example.com/owner", "web-team"))

	t.Log("the deployment reports the cell's Location and keeps its autoscaling metrics")
	g.Eventually(func(g Gomega) {
		cur := getWD(g, wd)
		g.Expect(cur.Status.Location).To(Equal(&cellLocation))
		g.Expect(fixtures.Diff(fixtures.DatumScaleSettings(), cur.Spec.ScaleSettings)).To(BeEmpty())
	}).Should(Succeed())
}

func TestAVirtualMachineWithoutABootableDiskFails(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	b := makeWD(ns, "vm")
	tpl := fixtures.DatumTemplate()
	tpl.Spec.Runtime.Sandbox = nil
	// No ConfigMap or Secret: the ReferencedData gate would hold the
	// Instance before the provider could refuse it.
	tpl.Spec.Volumes = slices.DeleteFunc(tpl.Spec.Volumes, func(v computev1alpha.InstanceVolume) bool {
		return v.ConfigMap != nil || v.Secret != nil
	})
	// The data disk is formatted, not populated from an image: nothing to boot.
	tpl.Spec.Runtime.VirtualMachine = &computev1alpha.VirtualMachineRuntime{
		VolumeAttachments: []computev1alpha.VolumeAttachment{{Name: "data"}},
	}
	b.wd.Spec.Template = tpl
	b.create(t)

	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(1))
		prog := meta.FindStatusCondition(insts[0].Status.Conditions, computev1alpha.ConditionProgrammed)
		g.Expect(prog).NotTo(BeNil())
		g.Expect(prog.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(prog.Reason).To(Equal(computev1alpha.ReasonConfigurationError))
		g.Expect(prog.Message).To(ContainSubstring("no bootable disk"))
	}).Should(Succeed())
}

func TestWithNetworkingIntegrationOffALeftoverNetworkGateIsRemoved(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "gated").create(t)
	inst := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leftover-0"},
		Spec: computev1alpha.InstanceSpec{
			Runtime: wd.Spec.Template.Spec.Runtime,
			Controller: &computev1alpha.InstanceController{TemplateHash: "h1", SchedulingGates: []computev1alpha.SchedulingGate{
				{Name: computev1alpha.NetworkSchedulingGate},
			}},
		},
	}
	g.Expect(k8s.Create(t.Context(), inst)).To(Succeed())

	t.Log("an Instance gated on Network by a run with the gate on is released and runs")
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.Instance{}
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(inst), cur)).To(Succeed())
		g.Expect(cur.Spec.Controller.SchedulingGates).To(BeEmpty())
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue())
	}).Should(Succeed())
}
