//go:build e2e

package runtime

import (
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestEnvFromAndSecurityContextReachTheRealNode: a Workload that reads a
// whole ConfigMap as environment, with a prefix, and runs its container
// without privilege escalation and without capabilities serves the
// ConfigMap's keys as variables, and its own process reports no new
// privileges and no effective capabilities.
func TestEnvFromAndSecurityContextReachTheRealNode(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	g.Expect(project.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: "settings"},
		Data: map[string]string{"GREETING": "bonjour", "COLOR": "green"}})).To(Succeed())

	w := clitest.NewWorkload("tplfields").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 1, city).Build()
	c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
	c.EnvFrom = []computev1alpha.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "settings"}}}
	c.SecurityContext = &computev1alpha.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &computev1alpha.Capabilities{Drop: []computev1alpha.Capability{"ALL"}},
	}
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "tplfields", "--timeout", "3m", "-y")

	t.Log("--- the instance serves the ConfigMap's keys as prefixed variables")
	inst := servingInstance(g, ns)
	base := "http://" + address(inst) + ":8080/?"
	g.Expect(get(t, base+url.Values{"env": {"APP_GREETING"}}.Encode())).To(ContainSubstring("APP_GREETING=bonjour"))
	g.Expect(get(t, base+url.Values{"env": {"APP_COLOR"}}.Encode())).To(ContainSubstring("APP_COLOR=green"))

	t.Log("--- its process may not gain privileges and holds no capabilities")
	status := get(t, base+url.Values{"file": {"/proc/self/status"}}.Encode())
	g.Expect(status).To(MatchRegexp(`NoNewPrivs:\s+1\n`))
	g.Expect(status).To(MatchRegexp(`CapEff:\s+0000000000000000\n`))

	t.Log("--- the cell's Pod reads the companion and carries the security context")
	pods := cellPods(g, ns.hub)
	g.Expect(pods).To(HaveLen(1))
	pc := pods[0].Spec.Containers[0]
	g.Expect(pc.EnvFrom).To(HaveLen(1))
	g.Expect(pc.EnvFrom[0].ConfigMapRef.Name).To(Equal("configmap.settings"))
	g.Expect(pc.SecurityContext).NotTo(BeNil())
	g.Expect(pc.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))

	u.run(cmdutil.ExitOK, "destroy", "tplfields", "--yes", "--wait")
}
