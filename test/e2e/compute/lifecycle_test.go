//go:build e2e

package compute

import (
	"context"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/standin/simprovider"
)

func TestACitysPolicyLivesAsLongAsItsDeployments(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)

	t.Log("the first deployment in DFW brings DFW's policy")
	dfw := makeWorkload(ns.name, "dfw-only").withPlacement("edge", 1, "DFW").create(t)
	g.Eventually(func(g Gomega) []string { return policyNames(g, ns.hub) }).
		WithTimeout(chainWait).WithPolling(poll).Should(Equal([]string{"city-dfw"}))

	t.Log("a Workload also in LHR brings LHR's policy")
	both := makeWorkload(ns.name, "both").withPlacement("edge", 1, "DFW", "LHR").create(t)
	g.Eventually(func(g Gomega) []string { return policyNames(g, ns.hub) }).
		WithTimeout(chainWait).WithPolling(poll).Should(Equal([]string{"city-dfw", "city-lhr"}))
	expectAvailable(t, both, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})

	t.Log("deleting it removes LHR's policy with LHR's last deployment; DFW's stays for the other Workload")
	g.Expect(project.Delete(ctx, both)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return policyNames(g, ns.hub) }).
		WithTimeout(chainWait).WithPolling(poll).Should(Equal([]string{"city-dfw"}))
	g.Consistently(func(g Gomega) []string { return policyNames(g, ns.hub) }).
		WithTimeout(2 * time.Second).WithPolling(poll).Should(Equal([]string{"city-dfw"}))
	expectAvailable(t, dfw, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})

	t.Log("deleting the last Workload in DFW removes DFW's policy")
	g.Expect(project.Delete(ctx, dfw)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return policyNames(g, ns.hub) }).
		WithTimeout(chainWait).WithPolling(poll).Should(BeEmpty())
}

func TestAProviderFailureInOneCityShowsAsThatCitysReason(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "flaky").withPlacement("edge", 1, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	var lhr string
	for _, wd := range deploymentsOf(g, w) {
		if wd.Spec.CityCode == "LHR" {
			lhr = wd.Name
		}
	}

	t.Log("LHR's provider cannot pull the image of its Instance")
	setFailure(g, "LHR", ns.hub, lhr, computev1alpha.ReasonImageUnavailable)

	t.Log("the Workload stays Available through DFW and names LHR's reason; LHR's city says ImageUnavailable")
	got := &computev1alpha.Workload{}
	g.Eventually(func(g Gomega) {
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		cs := cityOf(got, "edge", "LHR")
		g.Expect(cs).NotTo(BeNil())
		g.Expect(cs.Available).To(BeFalse())
		g.Expect(cs.Reason).To(Equal(computev1alpha.ReasonImageUnavailable))
		g.Expect(cityOf(got, "edge", "DFW").Available).To(BeTrue())
		available := meta.FindStatusCondition(got.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(available.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(available.Message).To(ContainSubstring("LHR (ImageUnavailable)"))
		g.Expect(got.Status.ReadyReplicas).To(Equal(int32(1)))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("the projected LHR Instance shows why it is not ready")
	g.Eventually(func(g Gomega) {
		projected := instancesIn(g, project, ns.name, lhr)
		g.Expect(projected).To(HaveLen(1))
		r := meta.FindStatusCondition(projected[0].Status.Conditions, computev1alpha.ConditionReady)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Reason).To(Equal(computev1alpha.ReasonImageUnavailable))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("once the provider recovers, LHR is available again")
	setFailure(g, "LHR", ns.hub, lhr, "")
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
}

// setFailure sets (or, with reason "", clears) the simulated provider's
// failure on every Instance of a deployment in a city's cell.
func setFailure(g Gomega, city, namespace, deployment, reason string) {
	g.Eventually(func(g Gomega) {
		insts := instancesIn(g, cells[city], namespace, deployment)
		g.Expect(insts).NotTo(BeEmpty())
		for i := range insts {
			inst := &insts[i]
			before := inst.DeepCopy()
			if reason == "" {
				delete(inst.Annotations, simprovider.FailAnnotation)
			} else {
				metav1.SetMetaDataAnnotation(&inst.ObjectMeta, simprovider.FailAnnotation, reason)
			}
			g.Expect(cells[city].Patch(context.Background(), inst, client.MergeFrom(before))).To(Succeed())
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

func TestRestartingRollsEveryInstanceInEveryCity(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "restart").withPlacement("edge", 2, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 4, ready: 4, desired: 4, updated: 4})
	wds := deploymentsOf(g, w)
	before := map[string]types.UID{}
	for _, wd := range wds {
		for _, inst := range instancesIn(g, cells[wd.Spec.CityCode], ns.hub, wd.Name) {
			before[inst.Name] = inst.UID
		}
	}

	t.Log("restarting the Workload (a new restartedAt) replaces every Instance in DFW and LHR")
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		if w.Spec.Template.Metadata.Annotations == nil {
			w.Spec.Template.Metadata.Annotations = map[string]string{}
		}
		w.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	})
	expectAvailable(t, w, counts{deployments: 2, replicas: 4, ready: 4, desired: 4, updated: 4})
	t.Log("each cell runs new Instances of the new template, and the project's projections show it")
	g.Eventually(func(g Gomega) {
		for _, wd := range deploymentsOf(g, w) {
			g.Expect(wd.Status.TemplateHash).NotTo(BeEmpty())
			cell := instancesIn(g, cells[wd.Spec.CityCode], ns.hub, wd.Name)
			g.Expect(ordinals(cell)).To(Equal(seq(2)))
			for _, inst := range cell {
				g.Expect(inst.UID).NotTo(Equal(before[inst.Name]), "Instance %s was not replaced", inst.Name)
				g.Expect(inst.Status.Controller).NotTo(BeNil())
				g.Expect(inst.Status.Controller.ObservedTemplateHash).To(Equal(wd.Status.TemplateHash))
			}
			for _, p := range instancesIn(g, project, ns.name, wd.Name) {
				g.Expect(p.Spec.Controller.TemplateHash).To(Equal(wd.Status.TemplateHash))
				g.Expect(ready(&p)).To(BeTrue())
			}
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

func TestScalingUpAndDownReachesEveryCity(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "scale").withPlacement("edge", 1, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})

	scaleTo := func(n int32) {
		updateWorkload(t, w, func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = n })
		expectAvailable(t, w, counts{deployments: 2, replicas: 2 * n, ready: 2 * n, desired: 2 * n, updated: 2 * n})
		g.Eventually(func(g Gomega) {
			for _, wd := range deploymentsOf(g, w) {
				g.Expect(ordinals(instancesIn(g, cells[wd.Spec.CityCode], ns.hub, wd.Name))).To(Equal(seq(int(n))))
				g.Expect(ordinals(instancesIn(g, hub, ns.hub, wd.Name))).To(Equal(seq(int(n))), "written back in %s", wd.Spec.CityCode)
			}
		}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	}

	t.Log("scaling to 3 per city runs 3 Instances in each city, every one projected and ready")
	scaleTo(3)
	g.Eventually(func(g Gomega) {
		for _, wd := range deploymentsOf(g, w) {
			projected := instancesIn(g, project, ns.name, wd.Name)
			g.Expect(ordinals(projected)).To(Equal(seq(3)))
			for i := range projected {
				g.Expect(ready(&projected[i])).To(BeTrue())
			}
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())

	t.Log("scaling back to 1 per city leaves 1 Instance in each city, in the cells and in the hub")
	scaleTo(1)
}

func TestDeletingTheWorkloadLeavesNothingInAnyPlane(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "gone").withPlacement("edge", 1, cities...).create(t)
	expectAvailable(t, w, counts{deployments: 3, replicas: 3, ready: 3, desired: 3, updated: 3})

	t.Log("deleting the Workload removes it, its deployments, revisions and projections from the project, " +
		"its copies, written-back Instances, policies and bindings from the hub, and everything from the cells")
	g.Expect(project.Delete(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(listed(g, project, ns.name, &computev1alpha.WorkloadList{})).To(BeEmpty(), "Workloads")
		g.Expect(listed(g, project, ns.name, &computev1alpha.WorkloadDeploymentList{})).To(BeEmpty(), "WorkloadDeployments")
		g.Expect(listed(g, project, ns.name, &computev1alpha.InstanceList{})).To(BeEmpty(), "projected Instances")
		g.Expect(listed(g, project, ns.name, &appsv1.ControllerRevisionList{})).To(BeEmpty(), "revisions")
		// The hub: copies, written-back Instances, policies, bindings.
		g.Expect(listed(g, hub, ns.hub, &computev1alpha.WorkloadDeploymentList{})).To(BeEmpty(), "hub WorkloadDeployments")
		g.Expect(listed(g, hub, ns.hub, &computev1alpha.InstanceList{})).To(BeEmpty(), "hub Instances")
		g.Expect(policyNames(g, ns.hub)).To(BeEmpty(), "PropagationPolicies")
		g.Expect(listed(g, hub, ns.hub, &workv1alpha2.ResourceBindingList{})).To(BeEmpty(), "ResourceBindings")
		// Every cell.
		for _, city := range cities {
			g.Expect(listed(g, cells[city], ns.hub, &computev1alpha.WorkloadDeploymentList{})).To(BeEmpty(), "WorkloadDeployments in %s", city)
			g.Expect(listed(g, cells[city], ns.hub, &computev1alpha.InstanceList{})).To(BeEmpty(), "Instances in %s", city)
		}
	}).WithTimeout(chainWait).WithPolling(time.Second).Should(Succeed())
}

// listed returns the names of the objects of list's kind in namespace.
func listed(g Gomega, c client.Client, namespace string, list client.ObjectList) []string {
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	items, err := meta.ExtractList(list)
	g.Expect(err).NotTo(HaveOccurred())
	out := make([]string, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			out = append(out, obj.GetName())
		}
	}
	return out
}
