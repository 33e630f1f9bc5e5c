//go:build e2e

package compute

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

func TestAWorkloadInTwoCitiesRunsInBothAndBecomesAvailable(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "web").withPlacement("edge", 2, "DFW", "LHR").create(t)

	t.Log("the Workload becomes Available with 2 deployments and 4 of 4 replicas ready and up to date")
	expectAvailable(t, w, counts{deployments: 2, replicas: 4, ready: 4, desired: 4, updated: 4})

	t.Log("the project has one WorkloadDeployment per city, federated to the project namespace's hub namespace")
	wds := deploymentsOf(g, w)
	g.Expect(wds).To(HaveLen(2))
	for _, wd := range wds {
		g.Expect(controllerutil.ContainsFinalizer(&wd, computev1alpha.FederationFinalizer)).To(BeTrue(), "finalizer on %s", wd.Name)
		g.Expect(wd.Annotations).To(HaveKeyWithValue(computev1alpha.FederationNamespaceAnnotation, ns.hub))
		g.Expect(meta.IsStatusConditionTrue(wd.Status.Conditions, computev1alpha.ConditionFederated)).To(BeTrue())
		g.Expect(wd.Status.ObservedGeneration).To(Equal(wd.Generation))
		g.Expect(wd.Status.ReadyReplicas).To(Equal(int32(2)))
	}

	t.Log("the hub namespace says where it comes from")
	hubNS := &corev1.Namespace{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: ns.hub}, hubNS)).To(Succeed())
	g.Expect(hubNS.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamClusterNameLabel, names.UpstreamClusterName("default")))
	g.Expect(hubNS.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamNamespaceLabel, ns.name))

	t.Log("the hub holds a copy of each, with the same spec, labelled for routing; one policy per city")
	for _, wd := range wds {
		hubWD := &computev1alpha.WorkloadDeployment{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, hubWD)).To(Succeed())
		g.Expect(hubWD.Spec).To(Equal(wd.Spec))
		g.Expect(hubWD.Labels).To(HaveKeyWithValue(computev1alpha.CityCodeTopologyLabel, wd.Spec.CityCode))
		g.Expect(hubWD.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamClusterNameLabel, names.UpstreamClusterName("default")))
		g.Expect(hubWD.Labels).To(HaveKeyWithValue(computev1alpha.UpstreamNamespaceLabel, ns.name))
		g.Expect(hubWD.OwnerReferences).To(BeEmpty(), "owner references never cross planes")
	}
	g.Expect(policyNames(g, ns.hub)).To(Equal([]string{"city-dfw", "city-lhr"}))

	t.Log("each city's cell runs its deployment with 2 ready Instances; SIN runs nothing")
	for _, wd := range wds {
		city := wd.Spec.CityCode
		g.Expect(cells[city].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, &computev1alpha.WorkloadDeployment{})).To(Succeed())
		insts := instancesIn(g, cells[city], ns.hub, wd.Name)
		g.Expect(ordinals(insts)).To(Equal(seq(2)))
		for i := range insts {
			g.Expect(ready(&insts[i])).To(BeTrue(), "Instance %s in %s", insts[i].Name, city)
		}
	}
	sinWDs := &computev1alpha.WorkloadDeploymentList{}
	g.Expect(cells["SIN"].List(ctx, sinWDs, client.InNamespace(ns.hub))).To(Succeed())
	g.Expect(sinWDs.Items).To(BeEmpty())

	t.Log("the cell's own API server enforces Pod Security baseline in the namespace: a Pod adding SYS_ADMIN is refused " +
		"whoever creates it (here the cell's administrator), a plain one admitted")
	g.Eventually(func(g Gomega) {
		cellNS := &corev1.Namespace{}
		g.Expect(cells["DFW"].Get(ctx, client.ObjectKey{Name: ns.hub}, cellNS)).To(Succeed())
		g.Expect(cellNS.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	pod := func(name string, sc *corev1.SecurityContext) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.hub, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "ghcr.io/citycells/hello:1.0", SecurityContext: sc}}}}
	}
	err := cells["DFW"].Create(ctx, pod("root", &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}), client.DryRunAll)
	g.Expect(err).To(HaveOccurred(), "the DFW cell admitted a Pod adding SYS_ADMIN into a federation namespace")
	g.Expect(err.Error()).To(ContainSubstring(`violates PodSecurity "baseline:latest"`))
	g.Expect(cells["DFW"].Create(ctx, pod("plain", nil), client.DryRunAll)).To(Succeed())

	t.Log("every Instance is written back to the hub and projected, ready, into the project namespace")
	g.Eventually(func(g Gomega) {
		for _, wd := range wds {
			g.Expect(ordinals(instancesIn(g, hub, ns.hub, wd.Name))).To(Equal(seq(2)))
			projected := instancesIn(g, project, ns.name, wd.Name)
			g.Expect(ordinals(projected)).To(Equal(seq(2)))
			for i := range projected {
				g.Expect(projected[i].Labels).To(HaveKeyWithValue(computev1alpha.ProjectionLabel, "true"))
				g.Expect(ready(&projected[i])).To(BeTrue())
			}
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

func TestTwoPlacementsInTwoCitiesMakeFourDeployments(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "api").
		withPlacement("blue", 1, "DFW", "LHR").
		withPlacement("green", 1, "LHR", "DFW").
		create(t)

	t.Log("the Workload reports 4 deployments, each with its replica ready")
	w = expectAvailable(t, w, counts{deployments: 4, replicas: 4, ready: 4, desired: 4, updated: 4})
	for _, p := range []string{"blue", "green"} {
		for _, city := range []string{"DFW", "LHR"} {
			cs := cityOf(w, p, city)
			g.Expect(cs).NotTo(BeNil(), "placement %s city %s", p, city)
			g.Expect(cs.Available).To(BeTrue())
			g.Expect(cs.ReadyReplicas).To(Equal(int32(1)))
		}
	}

	t.Log("each cell runs the two deployments of its city")
	for _, city := range []string{"DFW", "LHR"} {
		list := &computev1alpha.WorkloadDeploymentList{}
		g.Expect(cells[city].List(t.Context(), list, client.InNamespace(ns.hub))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(2), "deployments in %s", city)
	}
	g.Expect(policyNames(g, ns.hub)).To(Equal([]string{"city-dfw", "city-lhr"}))
}

func TestWrittenBackInstancesCarryEveryLinkingLabel(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "labels").withPlacement("edge", 2, "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 2, ready: 2, desired: 2, updated: 2})
	wd := deploymentsOf(g, w)[0]

	hubWD := &computev1alpha.WorkloadDeployment{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, hubWD)).To(Succeed())
	cellWD := &computev1alpha.WorkloadDeployment{}
	g.Expect(cells["LHR"].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, cellWD)).To(Succeed())

	t.Log("the hub copy of each LHR Instance has its spec, status and every linking label, and is owned by the hub deployment")
	g.Eventually(func(g Gomega) {
		for _, inst := range instancesIn(g, cells["LHR"], ns.hub, wd.Name) {
			back := &computev1alpha.Instance{}
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&inst), back)).To(Succeed())
			g.Expect(back.Labels).To(And(
				HaveKeyWithValue(computev1alpha.WorkloadUIDLabel, string(w.UID)),
				HaveKeyWithValue(computev1alpha.WorkloadNameLabel, w.Name),
				HaveKeyWithValue(computev1alpha.WorkloadDeploymentUIDLabel, string(cellWD.UID)),
				HaveKeyWithValue(computev1alpha.WorkloadDeploymentNameLabel, wd.Name),
				HaveKeyWithValue(computev1alpha.InstanceIndexLabel, inst.Labels[computev1alpha.InstanceIndexLabel]),
				HaveKeyWithValue(computev1alpha.CityCodeLabel, "LHR"),
				HaveKeyWithValue(computev1alpha.PlacementNameLabel, "edge"),
			))
			g.Expect(back.Spec).To(Equal(inst.Spec))
			g.Expect(back.Status).To(Equal(inst.Status))
			g.Expect(back.OwnerReferences).To(HaveLen(1))
			g.Expect(back.OwnerReferences[0].Kind).To(Equal(computev1alpha.WorkloadDeploymentKind))
			g.Expect(back.OwnerReferences[0].UID).To(Equal(hubWD.UID))
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

func TestProjectionsAreOwnedByTheirProjectDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "owned").withPlacement("edge", 1, "SIN").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	wd := deploymentsOf(g, w)[0]

	t.Log("the projected Instance names the project WorkloadDeployment as its owner, not a copy in another plane")
	var projected []computev1alpha.Instance
	g.Eventually(func(g Gomega) {
		projected = instancesIn(g, project, ns.name, wd.Name)
		g.Expect(projected).To(HaveLen(1))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	owner := metav1.GetControllerOf(&projected[0])
	g.Expect(owner).NotTo(BeNil())
	g.Expect(owner.Kind).To(Equal(computev1alpha.WorkloadDeploymentKind))
	g.Expect(owner.Name).To(Equal(wd.Name))
	g.Expect(owner.UID).To(Equal(wd.UID))

	t.Log("the projection carries the Instance's labels and the projection label, and is Ready")
	g.Expect(projected[0].Labels).To(HaveKeyWithValue(computev1alpha.ProjectionLabel, "true"))
	g.Expect(projected[0].Labels).To(HaveKeyWithValue(computev1alpha.CityCodeLabel, "SIN"))
	g.Expect(ready(&projected[0])).To(BeTrue())

	t.Log("deleting the WorkloadDeployment's Workload takes the projection with it")
	g.Expect(project.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(project.Get(context.Background(), client.ObjectKeyFromObject(&projected[0]), &computev1alpha.Instance{}))
	}).WithTimeout(chainWait).WithPolling(poll).Should(BeTrue())
}
