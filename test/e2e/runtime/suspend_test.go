//go:build e2e

package runtime

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestSuspendStopsThePodsAndKeepsTheInstances is Datum's project-suspension
// cycle on a real node: suspending a workload stops every instance — the
// Kubernetes provider deletes the Pods — without deleting any Instance,
// the cell, the hub and the project report it suspended, and resuming
// brings the same Instances back, Available, with new Pods.
func TestSuspendStopsThePodsAndKeepsTheInstances(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	w := clitest.NewWorkload("pause").Namespace(ns.name).Image(local.State().Registry+"/"+platform.DemoImage).Placement("default", 2, city).Build()
	g.Expect(project.Create(ctx, w)).To(Succeed())
	u.run(cmdutil.ExitOK, "rollout", "status", "pause", "--timeout", "3m", "-y")

	cellInstances := func(g Gomega) (names []string, uids map[string]string, suspended int) {
		list := &computev1alpha.InstanceList{}
		g.Expect(cell.List(ctx, list, client.InNamespace(ns.hub))).To(Succeed())
		uids = map[string]string{}
		for _, i := range list.Items {
			names = append(names, i.Name)
			uids[i.Name] = string(i.UID)
			if i.Status.Suspended {
				suspended++
			}
		}
		slices.Sort(names)
		return names, uids, suspended
	}
	pods := func(g Gomega) []corev1.Pod {
		list := &corev1.PodList{}
		g.Expect(cell.List(ctx, list, client.InNamespace(ns.hub))).To(Succeed())
		return list.Items
	}
	before, uids, _ := cellInstances(g)
	g.Expect(before).To(HaveLen(2))
	g.Expect(pods(g)).To(HaveLen(2))

	t.Log("--- suspend: the Pods go, the Instances stay, every plane says suspended")
	u.run(cmdutil.ExitOK, "suspend", "pause", "--wait", "--timeout", "3m")
	g.Eventually(func(g Gomega) {
		g.Expect(pods(g)).To(BeEmpty())
		names, now, suspended := cellInstances(g)
		g.Expect(names).To(Equal(before))
		g.Expect(now).To(Equal(uids), "an Instance was recreated")
		g.Expect(suspended).To(Equal(2))
		wd := &computev1alpha.WorkloadDeploymentList{}
		g.Expect(project.List(ctx, wd, client.InNamespace(ns.name))).To(Succeed())
		g.Expect(wd.Items).To(HaveLen(1))
		g.Expect(wd.Items[0].Status.Suspended).To(BeTrue(), "the project WorkloadDeployment is not suspended")
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	status := u.run(cmdutil.ExitOK, "status", "pause")
	g.Expect(status.Stdout).To(ContainSubstring("Suspended"))

	t.Log("--- resume: the same Instances come back Available, with new Pods")
	u.run(cmdutil.ExitOK, "resume", "pause", "--wait", "--timeout", "3m")
	g.Eventually(func(g Gomega) {
		names, now, suspended := cellInstances(g)
		g.Expect(names).To(Equal(before))
		g.Expect(now).To(Equal(uids), "an Instance was recreated")
		g.Expect(suspended).To(BeZero())
		g.Expect(pods(g)).To(HaveLen(2))
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	inst := servingInstance(g, ns)
	g.Expect(get(t, "http://"+address(inst)+":8080/")).NotTo(BeEmpty())
}
