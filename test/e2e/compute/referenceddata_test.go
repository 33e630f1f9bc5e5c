//go:build e2e

package compute

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// secretMarker is a Secret value that must never leave the Secrets: no
// Workload, WorkloadDeployment or Instance of any plane, and no
// component's log, may carry it.
const secretMarker = "mk-0b1e5c2a-never-leaves-the-secret"

// TestReferencedDataGoesToExactlyTheCitiesThatNeedIt is Datum's
// referenced-data multi-location, pull-secret and delete-cascade
// scenarios across three cities: a Workload in DFW and LHR referencing a
// Secret (mounted), a ConfigMap (env) and a pull secret gets one companion
// of each in the hub and in both cells, none in SIN; its instances pass the
// ReferencedData gate and become Available; a city dropped from the
// placement loses them; deleting the Workload removes them everywhere; and
// the Secret's bytes are found nowhere but in Secrets.
func TestReferencedDataGoesToExactlyTheCitiesThatNeedIt(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "db"},
		StringData: map[string]string{"password": secretMarker}})).To(Succeed())
	g.Expect(project.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "app"},
		Data: map[string]string{"mode": "blue"}})).To(Succeed())
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "regcred"},
		Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}})).To(Succeed())

	b := makeWorkload(ns.name, "refs").withPlacement("edge", 1, "DFW", "LHR")
	spec := &b.w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	c := &spec.Runtime.Sandbox.Containers[0]
	c.VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: ptr.To("/etc/db")}}
	c.Env = []computev1alpha.EnvVar{{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}}}
	spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "regcred"}}
	w := b.create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})

	companions := []string{"configmap.app", "secret.db", "secret.regcred"}
	t.Log("one companion of each object in the hub and in DFW's and LHR's cells, none in SIN; the pull secret keeps its type")
	g.Eventually(func(g Gomega) {
		g.Expect(companionsIn(g, hub, ns.hub)).To(Equal(companions))
		g.Expect(companionsIn(g, cells["DFW"], ns.hub)).To(Equal(companions))
		g.Expect(companionsIn(g, cells["LHR"], ns.hub)).To(Equal(companions))
		g.Expect(companionsIn(g, cells["SIN"], ns.hub)).To(BeEmpty())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	reg := &corev1.Secret{}
	g.Expect(cells["DFW"].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: "secret.regcred"}, reg)).To(Succeed())
	g.Expect(reg.Type).To(Equal(corev1.SecretTypeDockerConfigJson))

	t.Log("every instance passed the ReferencedData gate")
	for _, city := range []string{"DFW", "LHR"} {
		var list computev1alpha.InstanceList
		g.Expect(cells[city].List(ctx, &list, client.InNamespace(ns.hub))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		for _, inst := range list.Items {
			g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty(), "%s is still gated", inst.Name)
		}
	}

	t.Log("the Secret's bytes are in no Workload, WorkloadDeployment, Instance or event of any plane")
	planes := map[string]client.Client{"project": project, "hub": hub}
	for city, c := range cells {
		planes[city] = c
	}
	for name, c := range planes {
		for _, list := range []client.ObjectList{&computev1alpha.WorkloadList{}, &computev1alpha.WorkloadDeploymentList{},
			&computev1alpha.InstanceList{}, &corev1.EventList{}} {
			if err := c.List(ctx, list); err != nil {
				continue // not every plane serves every kind
			}
			raw, err := json.Marshal(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(raw)).NotTo(ContainSubstring(secretMarker), "a %T of %s carries the Secret's value", list, name)
		}
	}

	t.Log("LHR dropped from the placement loses the companions; DFW keeps them")
	cur := &computev1alpha.Workload{}
	g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
	before := cur.DeepCopy()
	cur.Spec.Placements[0].CityCodes = []string{"DFW"}
	g.Expect(project.Patch(ctx, cur, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(companionsIn(g, cells["LHR"], ns.hub)).To(BeEmpty())
		g.Expect(companionsIn(g, cells["DFW"], ns.hub)).To(Equal(companions))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("deleting the Workload removes the companions from the hub and every cell")
	g.Expect(project.Delete(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(companionsIn(g, hub, ns.hub)).To(BeEmpty())
		for _, c := range cells {
			g.Expect(companionsIn(g, c, ns.hub)).To(BeEmpty())
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("no component logged the Secret's value")
	logs, err := filepath.Glob(filepath.Join(local.LogsDir(), "*.log"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logs).NotTo(BeEmpty())
	for _, f := range logs {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Contains(string(data), secretMarker)).To(BeFalse(), "%s logs the Secret's value", filepath.Base(f))
	}
}

// companionsIn lists the names of the companions in namespace of a plane,
// sorted.
func companionsIn(g Gomega, c client.Client, namespace string) []string {
	sel := []client.ListOption{client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue}}
	var out []string
	var cms corev1.ConfigMapList
	g.Expect(c.List(context.Background(), &cms, sel...)).To(Succeed())
	for _, cm := range cms.Items {
		out = append(out, cm.Name)
	}
	var secrets corev1.SecretList
	g.Expect(c.List(context.Background(), &secrets, sel...)).To(Succeed())
	for _, s := range secrets.Items {
		out = append(out, s.Name)
	}
	return out
}
