package cell

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	computenames "github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/referenceddata"
)

// readsData makes the deployment's template mount Secret db and read key
// mode of ConfigMap app as an environment variable, and records on the
// deployment what the management plane would: both expected, at hashes
// h-db and h-app.
func (b *wdBuilder) readsData() *wdBuilder {
	spec := &b.wd.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, computev1alpha.InstanceVolume{Name: "creds", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}})
	c := &spec.Runtime.Sandbox.Containers[0]
	c.VolumeAttachments = append(c.VolumeAttachments, computev1alpha.VolumeAttachment{Name: "creds", MountPath: ptr.To("/etc/db")})
	c.Env = append(c.Env, computev1alpha.EnvVar{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"},
	}})
	b.wd.Annotations = referenceddata.Expected{
		Tokens:       []string{"ConfigMap/app", "Secret/db"},
		Hashes:       map[string]string{"ConfigMap/app": "h-app", "Secret/db": "h-db"},
		TemplateHash: computenames.TemplateHash(&b.wd.Spec.Template),
	}.Annotations()
	return b
}

// companion returns the labelled cell copy of the project's object of kind
// and name, carrying hash.
func companion(ns, kind, name, hash string) client.Object {
	om := metav1.ObjectMeta{
		Namespace:   ns,
		Name:        referenceddata.CompanionName(kind, name),
		Labels:      map[string]string{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue},
		Annotations: map[string]string{computev1alpha.ReferencedDataHashAnnotation: hash},
	}
	if kind == referenceddata.KindSecret {
		return &corev1.Secret{ObjectMeta: om, Data: map[string][]byte{"password": []byte("s3cret")}}
	}
	return &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"mode": "prod"}}
}

// hasDataGate reports whether the ReferencedData gate holds inst.
func hasDataGate(inst *computev1alpha.Instance) bool {
	return inst.Spec.Controller != nil && slices.ContainsFunc(inst.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
		return g.Name == computev1alpha.ReferencedDataSchedulingGate
	})
}

func TestInstancesWaitForTheirReferencedDataAtTheExpectedVersion(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "refdata").replicas(2).parallel().readsData().create(t)

	t.Log("no companion in the cell: the Instances exist, held by the ReferencedData gate, naming what they wait for")
	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(2))
		for _, inst := range insts {
			g.Expect(hasDataGate(&inst)).To(BeTrue(), "instance %s", inst.Name)
			c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReferencedDataReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(computev1alpha.ReasonAwaitingPropagation))
			g.Expect(c.Message).To(And(ContainSubstring("ConfigMap/app"), ContainSubstring("Secret/db")))
			ready := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(computev1alpha.ReasonAwaitingPropagation))
		}
	}).Should(Succeed())
	t.Log("the deployment reports them the way it reports Instances held by quota")
	g.Eventually(func(g Gomega) {
		avail := meta.FindStatusCondition(getWD(g, wd).Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Reason).To(Equal(computev1alpha.ReasonAwaitingPropagation))
	}).Should(Succeed())

	t.Log("the ConfigMap arrives at its hash, the Secret at another: the gate stays, and only the Secret is waited for")
	g.Expect(k8s.Create(t.Context(), companion(ns, referenceddata.KindConfigMap, "app", "h-app"))).To(Succeed())
	secret := companion(ns, referenceddata.KindSecret, "db", "h-old")
	g.Expect(k8s.Create(t.Context(), secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, inst := range instancesIn(g, ns) {
			g.Expect(hasDataGate(&inst)).To(BeTrue())
			c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReferencedDataReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(computev1alpha.ReasonAwaitingPropagation))
			g.Expect(c.Message).To(ContainSubstring("Secret/db"))
			g.Expect(c.Message).NotTo(ContainSubstring("ConfigMap/app"))
		}
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, inst := range instancesIn(g, ns) {
			g.Expect(hasDataGate(&inst)).To(BeTrue(), "a companion at the wrong version released instance %s", inst.Name)
		}
	}).WithTimeout(time.Second).Should(Succeed())

	t.Log("the Secret is updated to the expected version: the gate goes, the condition turns True and the Instances run")
	cur := &corev1.Secret{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(secret), cur)).To(Succeed())
	patched := cur.DeepCopy()
	patched.Annotations[computev1alpha.ReferencedDataHashAnnotation] = "h-db"
	g.Expect(k8s.Patch(t.Context(), patched, client.MergeFrom(cur))).To(Succeed())
	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(2))
		for _, inst := range insts {
			g.Expect(hasDataGate(&inst)).To(BeFalse())
			c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReferencedDataReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(computev1alpha.ReasonReferencedDataReady))
			g.Expect(meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
		}
	}).Should(Succeed())

	t.Log("a companion that goes later does not stop Instances that run: the gate is never put back")
	g.Expect(k8s.Delete(t.Context(), patched)).To(Succeed())
	g.Consistently(func(g Gomega) {
		for _, inst := range instancesIn(g, ns) {
			g.Expect(hasDataGate(&inst)).To(BeFalse())
			g.Expect(meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
		}
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

func TestAResolutionErrorIsReportedAndHoldsTheInstances(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	b := makeWD(ns, "notfound").readsData()
	b.wd.Annotations[computev1alpha.ReferencedDataErrorAnnotation] = "SourceNotFound: Secret db does not exist in the project's namespace"
	b.create(t)

	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(1))
		g.Expect(hasDataGate(&insts[0])).To(BeTrue())
		ready := meta.FindStatusCondition(insts[0].Status.Conditions, computev1alpha.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(computev1alpha.ReasonSourceNotFound))
		g.Expect(ready.Message).To(ContainSubstring("Secret db does not exist"))
	}).Should(Succeed())
}

func TestATemplateWithoutReferencesGetsNoReferencedDataGate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	makeWD(ns, "plain").create(t)

	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, ns)
		g.Expect(insts).To(HaveLen(1))
		g.Expect(hasDataGate(&insts[0])).To(BeFalse())
		g.Expect(meta.IsStatusConditionTrue(insts[0].Status.Conditions, computev1alpha.ConditionReady)).To(BeTrue())
		g.Expect(meta.FindStatusCondition(insts[0].Status.Conditions, computev1alpha.ConditionReferencedDataReady)).To(BeNil())
	}).Should(Succeed())
}
