//go:build e2e

package runtime

import (
	"context"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestReferencedDataReachesTheRealNode is Datum's referenced-data-mounts
// and delete-cascade scenarios on a real node: a Workload mounting a Secret
// and reading a ConfigMap key as env serves both, a rotated Secret reaches
// a restarted instance, and deleting the Workload takes the companions
// away from the hub and the cell.
func TestReferencedDataReachesTheRealNode(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "db"},
		StringData: map[string]string{"password": "hunter2"}})).To(Succeed())
	g.Expect(project.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "app"},
		Data: map[string]string{"mode": "blue"}})).To(Succeed())

	w := clitest.NewWorkload("refs").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 1, city).Build()
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	c := &spec.Runtime.Sandbox.Containers[0]
	c.VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: ptr.To("/etc/db")}}
	c.Env = []computev1alpha.EnvVar{{Name: "MODE", ValueFrom: &computev1alpha.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode"}}}}
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "refs", "--timeout", "3m", "-y")

	t.Log("--- the companions are in the hub and the cell, the gate is cleared, and the instance serves the file and the variable")
	for plane, c := range map[string]client.Client{"hub": hub, "cell": cell} {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: "secret.db"}, &corev1.Secret{})).To(Succeed(), "no secret.db in the %s", plane)
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: "configmap.app"}, &corev1.ConfigMap{})).To(Succeed(), "no configmap.app in the %s", plane)
	}
	inst := servingInstance(g, ns)
	c0 := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionReferencedDataReady)
	g.Expect(c0).NotTo(BeNil())
	g.Expect(c0.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(inst.Spec.Controller.SchedulingGates).To(BeEmpty())
	base := "http://" + address(inst) + ":8080/?"
	g.Expect(get(t, base+url.Values{"file": {"/etc/db/password"}}.Encode())).To(ContainSubstring("hunter2"))
	g.Expect(get(t, base+url.Values{"env": {"MODE"}}.Encode())).To(ContainSubstring("blue"))

	t.Log("--- a rotated Secret reaches the companions, and a restarted instance serves it")
	secret := &corev1.Secret{}
	g.Expect(project.Get(ctx, client.ObjectKey{Namespace: ns.name, Name: "db"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("correct-horse")
	g.Expect(project.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cs := &corev1.Secret{}
		g.Expect(cell.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: "secret.db"}, cs)).To(Succeed())
		g.Expect(string(cs.Data["password"])).To(Equal("correct-horse"))
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	u.run(cmdutil.ExitOK, "restart", "refs", "--wait", "--timeout", "3m")
	g.Eventually(func(g Gomega) {
		inst := servingInstance(g, ns)
		g.Expect(get(t, "http://"+address(inst)+":8080/?"+url.Values{"file": {"/etc/db/password"}}.Encode())).To(ContainSubstring("correct-horse"))
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())

	t.Log("--- deleting the Workload removes its companions from the hub and the cell")
	u.run(cmdutil.ExitOK, "destroy", "refs", "--yes", "--wait")
	g.Eventually(func(g Gomega) {
		for _, c := range []client.Client{hub, cell} {
			var secrets corev1.SecretList
			g.Expect(c.List(ctx, &secrets, client.InNamespace(ns.hub),
				client.MatchingLabels{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue})).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty())
			var cms corev1.ConfigMapList
			g.Expect(c.List(ctx, &cms, client.InNamespace(ns.hub),
				client.MatchingLabels{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue})).To(Succeed())
			g.Expect(cms.Items).To(BeEmpty())
		}
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
}

// servingInstance returns the one Available Instance of the namespace in
// the cell.
func servingInstance(g Gomega, ns projectNamespace) *computev1alpha.Instance {
	var out *computev1alpha.Instance
	g.Eventually(func(g Gomega) {
		out = nil
		list := &computev1alpha.InstanceList{}
		g.Expect(cell.List(context.Background(), list, client.InNamespace(ns.hub))).To(Succeed())
		for i := range list.Items {
			if inst := &list.Items[i]; available(inst) && inst.DeletionTimestamp == nil {
				out = inst.DeepCopy()
			}
		}
		g.Expect(out).NotTo(BeNil(), "no Available Instance")
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	return out
}
