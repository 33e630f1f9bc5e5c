//go:build e2e

package runtime

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/quota"
	"github.com/citycells/compute/test/clitest"
)

// TestARequestsOnlyContainersClaimEqualsItsPodsSize (issue 39, item 5): a
// container stating only requests runs on the real node limited to them,
// and compute-quota's ResourceClaim for its Instance asks for exactly the
// Pod's limits, not its instance type; one asking for more than its type
// is refused by the project plane, naming the field.
func TestARequestsOnlyContainersClaimEqualsItsPodsSize(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	sized := func(name, cpu, mem string) *computev1alpha.Workload {
		w := clitest.NewWorkload(name).Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 1, city).Build()
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Resources = &computev1alpha.ContainerResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
		return w
	}

	t.Log("--- a container asking 16 CPU and 64Gi of a 1 vCPU, 2Gi type is refused on the field")
	err := project.Create(ctx, sized("huge", "16", "64Gi"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.template.spec.runtime.sandbox.containers[0].resources.requests.cpu"))
	g.Expect(err.Error()).To(ContainSubstring(`container "app" asks for 16 cpu, more than the instance's 1 cpu`))

	t.Log("--- one asking 250m and 256Mi runs at that, and claims that")
	g.Expect(project.Create(ctx, sized("small", "250m", "256Mi"))).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "small", "--timeout", "3m", "-y")
	inst := servingInstance(g, ns)
	pods := cellPods(g, ns.hub)
	g.Expect(pods).To(HaveLen(1))
	lim := pods[0].Spec.Containers[0].Resources.Limits
	g.Expect(lim.Cpu().MilliValue()).To(Equal(int64(250)))
	g.Expect(lim.Memory().Value()).To(Equal(int64(256 << 20)))

	s := runtime.NewScheme()
	g.Expect(quotav1alpha1.AddToScheme(s)).To(Succeed())
	qc, err := client.New(local.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	claim := &quotav1alpha1.ResourceClaim{}
	g.Expect(qc.Get(ctx, client.ObjectKey{Namespace: ns.name, Name: quota.ClaimName(inst)}, claim)).To(Succeed())
	amounts := map[string]int64{}
	for _, r := range claim.Spec.Requests {
		amounts[r.ResourceType] = r.Amount
	}
	t.Logf("the Pod is limited to %s and %s; the claim asks %v", lim.Cpu(), lim.Memory(), amounts)
	g.Expect(amounts).To(HaveKeyWithValue(computev1alpha.ResourceTypeVCPUs, lim.Cpu().MilliValue()))
	g.Expect(amounts).To(HaveKeyWithValue(computev1alpha.ResourceTypeMemory, lim.Memory().Value()>>20))

	u.run(cmdutil.ExitOK, "destroy", "small", "--yes", "--wait")
}
