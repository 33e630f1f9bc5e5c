package federation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

// marker is a secret value no plane's objects other than the Secrets may
// ever carry.
const marker = "s3cr3t-marker-7f1c"

// withReferences makes wd mount Secret db and read key "mode" of ConfigMap
// app as env.
func withReferences(wd *computev1alpha.WorkloadDeployment) *computev1alpha.WorkloadDeployment {
	spec := &wd.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, computev1alpha.InstanceVolume{Name: "db",
		Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}})
	c := &spec.Runtime.Sandbox.Containers[0]
	c.Env = append(c.Env, computev1alpha.EnvVar{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}})
	return wd
}

func TestReferencedDataIsCopiedToTheHubAndCollectedWithItsLastUser(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte(marker)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"mode": "blue"}}
	g.Expect(projectClient.Create(ctx, secret)).To(Succeed())
	g.Expect(projectClient.Create(ctx, cm)).To(Succeed())
	dfw := withReferences(makeWD(ns, "web-dfw", "DFW", 1))
	lhr := withReferences(makeWD(ns, "web-lhr", "LHR", 1))
	g.Expect(projectClient.Create(ctx, dfw)).To(Succeed())
	g.Expect(projectClient.Create(ctx, lhr)).To(Succeed())

	t.Log("one companion per object in the hub namespace, a Secret staying a Secret, labelled and hashed")
	hubSecret, hubCM := &corev1.Secret{}, &corev1.ConfigMap{}
	g.Eventually(get(hubClient, hubNS, "secret.db", hubSecret), timeout, interval).Should(Succeed())
	g.Eventually(get(hubClient, hubNS, "configmap.app", hubCM), timeout, interval).Should(Succeed())
	g.Expect(hubSecret.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(string(hubSecret.Data["password"])).To(Equal(marker))
	g.Expect(hubCM.Data).To(HaveKeyWithValue("mode", "blue"))
	for _, obj := range []client.Object{hubSecret, hubCM} {
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("compute.datumapis.com/referenced-data", "true"))
		g.Expect(obj.GetAnnotations()).To(HaveKey(computev1alpha.ReferencedDataHashAnnotation))
	}

	t.Log("each deployment records what its cell must hold, holds Datum's finalizer, reports ReferencedDataReady, and its hub copy carries the record")
	want := `["ConfigMap/app","Secret/db"]`
	for _, wd := range []*computev1alpha.WorkloadDeployment{dfw, lhr} {
		g.Eventually(func(g Gomega) {
			cur := &computev1alpha.WorkloadDeployment{}
			g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(wd), cur)).To(Succeed())
			g.Expect(cur.Annotations).To(HaveKeyWithValue("compute.datumapis.com/expected-referenced-data", want))
			g.Expect(controllerutil.ContainsFinalizer(cur, "compute.datumapis.com/referenced-data-controller")).To(BeTrue())
			c := meta.FindStatusCondition(cur.Status.Conditions, "ReferencedDataReady")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("Ready"))
			hubCopy := &computev1alpha.WorkloadDeployment{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: wd.Name}, hubCopy)).To(Succeed())
			g.Expect(hubCopy.Annotations).To(HaveKeyWithValue("compute.datumapis.com/expected-referenced-data", want))
			e := referenceddata.ExpectedOf(hubCopy.Annotations)
			g.Expect(e.Hashes).To(HaveKeyWithValue("Secret/db", hubSecret.Annotations[computev1alpha.ReferencedDataHashAnnotation]))
		}, timeout, interval).Should(Succeed())
	}

	t.Log("an attacker who reads the deployments or the companions' metadata cannot test a guess of the secret: " +
		"the version is the source object's (uid, resourceVersion), not a hash of its bytes")
	g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	version := hubSecret.Annotations[computev1alpha.ReferencedDataHashAnnotation]
	g.Expect(version).To(Equal(referenceddata.SourceVersion(string(secret.UID), secret.ResourceVersion)))
	for _, guess := range contentHashes(marker) {
		g.Expect(strings.Contains(version, guess) || strings.Contains(guess, version)).To(BeFalse(),
			"the companion's version %s is a hash of the secret's bytes", version)
	}

	t.Log("the city policies propagate the companions with the deployments")
	policy := &policyv1alpha1.PropagationPolicy{}
	g.Eventually(get(hubClient, hubNS, "city-dfw", policy), timeout, interval).Should(Succeed())
	g.Expect(policy.Spec.PropagateDeps).To(BeTrue())

	t.Log("the secret's bytes appear in no deployment, in either plane")
	for _, c := range []client.Client{projectClient, hubClient} {
		var list computev1alpha.WorkloadDeploymentList
		g.Expect(c.List(ctx, &list)).To(Succeed())
		raw, err := json.Marshal(list)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Contains(string(raw), marker)).To(BeFalse(), "a WorkloadDeployment carries the secret")
	}

	t.Log("a changed source updates its companion and the hash the cells must see")
	oldHash := hubSecret.Annotations[computev1alpha.ReferencedDataHashAnnotation]
	secret.Data["password"] = []byte("rotated")
	g.Expect(projectClient.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: "secret.db"}, hubSecret)).To(Succeed())
		g.Expect(string(hubSecret.Data["password"])).To(Equal("rotated"))
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(dfw), cur)).To(Succeed())
		g.Expect(referenceddata.ExpectedOf(cur.Annotations).Hashes["Secret/db"]).NotTo(Equal(oldHash))
	}, timeout, interval).Should(Succeed())

	t.Log("a source deleted in use: SourceNotFound, and its companion stays for what runs")
	g.Expect(projectClient.Delete(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(dfw), cur)).To(Succeed())
		c := meta.FindStatusCondition(cur.Status.Conditions, "ReferencedDataReady")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("SourceNotFound"))
		g.Expect(c.Message).To(ContainSubstring("ConfigMap app"))
		g.Expect(cur.Annotations).To(HaveKeyWithValue(computev1alpha.ReferencedDataErrorAnnotation, ContainSubstring("SourceNotFound")))
	}, timeout, interval).Should(Succeed())
	g.Consistently(get(hubClient, hubNS, "configmap.app", &corev1.ConfigMap{}), "2s", interval).Should(Succeed())
	g.Expect(projectClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Data: map[string]string{"mode": "green"}})).To(Succeed())

	t.Log("deleting one user keeps the shared companions; deleting the last collects them and releases the finalizers")
	g.Expect(projectClient.Delete(ctx, dfw)).To(Succeed())
	g.Eventually(gone(projectClient, ns, dfw.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(BeTrue())
	g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: "secret.db"}, &corev1.Secret{})).To(Succeed())
	g.Expect(projectClient.Delete(ctx, lhr)).To(Succeed())
	g.Eventually(gone(projectClient, ns, lhr.Name, &computev1alpha.WorkloadDeployment{}), timeout, interval).Should(BeTrue())
	g.Eventually(gone(hubClient, hubNS, "secret.db", &corev1.Secret{}), timeout, interval).Should(BeTrue())
	g.Eventually(gone(hubClient, hubNS, "configmap.app", &corev1.ConfigMap{}), timeout, interval).Should(BeTrue())
}

func TestReferencedDataOverTheLimitIsRefusedNamingTheObject(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	// 256 KiB and one byte of data, and the key's 4 bytes.
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		BinaryData: map[string][]byte{"blob": make([]byte, referenceddata.MaxObjectBytes+1)}}
	g.Expect(projectClient.Create(ctx, big)).To(Succeed())
	g.Expect(projectClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	wd := withReferences(makeWD(ns, "web-dfw", "DFW", 1))
	g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.WorkloadDeployment{}
		g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(wd), cur)).To(Succeed())
		c := meta.FindStatusCondition(cur.Status.Conditions, "ReferencedDataReady")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("SourceTooLarge"))
		g.Expect(c.Message).To(ContainSubstring("ConfigMap app holds 262149 bytes"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(gone(hubClient, hubNS, "configmap.app", &corev1.ConfigMap{}), "2s", interval).Should(BeTrue())
}

// contentHashes are what an attacker computes from a guessed password to
// test it against a version: SHA-256 of the bytes alone, and of the
// type-and-data encoding compute used to hash (hex, as annotations carry
// it).
func contentHashes(password string) []string {
	plain := sha256.Sum256([]byte(password))
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%d:%s|%d:%s=%d:", len("Opaque"), "Opaque", len("password"), "password", len(password))
	_, _ = h.Write([]byte(password))
	return []string{hex.EncodeToString(plain[:]), hex.EncodeToString(h.Sum(nil))}
}

// TestANamespaceOverItsCompanionBudgetIsRefusedTheNewestDeployment (#39
// item 4): a project namespace's companions are held to
// referenceddata.MaxNamespaceBytes in all. Nine deployments each reference
// 1000 KiB of their own (under the 1 MiB per deployment): the eight oldest
// fit the 8 MiB and are Ready, the ninth is refused SourceTooLarge naming
// the namespace's budget and gets no companion in the hub; once an older
// one is deleted, the ninth fits and is Ready.
func TestANamespaceOverItsCompanionBudgetIsRefusedTheNewestDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, hubNS := newNamespace(t)
	const perDeployment, objects = 4, 250 << 10
	var wds []*computev1alpha.WorkloadDeployment
	for i := range 9 {
		wd := makeWD(ns, fmt.Sprintf("web-%d", i), "DFW", 1)
		c := &wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
		for k := range perDeployment {
			name := fmt.Sprintf("data-%d-%d", i, k)
			g.Expect(projectClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				BinaryData: map[string][]byte{"blob": make([]byte, objects-len("blob"))}})).To(Succeed())
			c.Env = append(c.Env, computev1alpha.EnvVar{Name: fmt.Sprintf("DATA_%d", k), ValueFrom: &computev1alpha.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "blob"}}})
		}
		g.Expect(projectClient.Create(ctx, wd)).To(Succeed())
		// Created in order, and named in order where a second holds
		// several: the ninth is the newest.
		wds = append(wds, wd)
	}
	condition := func(wd *computev1alpha.WorkloadDeployment) func(g Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			cur := &computev1alpha.WorkloadDeployment{}
			g.Expect(projectClient.Get(ctx, client.ObjectKeyFromObject(wd), cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionReferencedDataReady)
			g.Expect(c).NotTo(BeNil())
			return c
		}
	}
	t.Log("the eight oldest fit the budget")
	for _, wd := range wds[:8] {
		g.Eventually(condition(wd), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
	}
	t.Log("the ninth is refused, naming the namespace's budget, and none of its data reaches the hub")
	g.Eventually(condition(wds[8]), timeout, interval).Should(And(HaveField("Reason", computev1alpha.ReasonSourceTooLarge),
		HaveField("Message", ContainSubstring("over the namespace's budget of 8388608 (8 MiB)")),
		HaveField("Message", ContainSubstring("with WorkloadDeployment web-8's"))))
	g.Consistently(gone(hubClient, hubNS, "configmap.data-8-0", &corev1.ConfigMap{}), "2s", interval).Should(BeTrue())

	t.Log("an older deployment goes: the ninth fits")
	g.Expect(projectClient.Delete(ctx, wds[0])).To(Succeed())
	g.Eventually(condition(wds[8]), timeout, interval).Should(HaveField("Status", metav1.ConditionTrue))
	g.Eventually(get(hubClient, hubNS, "configmap.data-8-0", &corev1.ConfigMap{}), timeout, interval).Should(Succeed())
}
