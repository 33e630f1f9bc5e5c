package management

import (
	"context"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

func TestWorkloadExpandsIntoOneDeploymentPerPlacementAndCity(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	for _, city := range []string{"DFW", "LHR", "SIN"} {
		bindCity(t, projectA, ns, city, true)
	}
	w := create(t, projectA, makeWorkload("web", ns).withPlacement("edge", 2, "DFW", "LHR").build())

	// Create: one deployment per city, named, labelled and owned as promised.
	g.Eventually(func(g gomega.Gomega) {
		wds := deploymentsOf(g, projectA, w)
		g.Expect(wds).To(gomega.HaveLen(2))
		for _, city := range []string{"DFW", "LHR"} {
			wd := wds[city]
			loc := strings.ToLower(city) + "-1"
			g.Expect(wd.Name).To(gomega.Equal(names.LocationDeploymentName("web", w.UID, "edge", city, locationNamespace, loc)))
			g.Expect(wd.Spec.LocationRef).To(gomega.Equal(&computev1alpha.LocationReference{Namespace: locationNamespace, Name: loc}))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.LocationTopologyLabel, loc))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.WorkloadNameLabel, "web"))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.PlacementNameLabel, "edge"))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.CityCodeLabel, city))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.CityCodeTopologyLabel, city))
			g.Expect(metav1.GetControllerOf(&wd).UID).To(gomega.Equal(w.UID))
			g.Expect(wd.Spec.WorkloadRef).To(gomega.Equal(computev1alpha.WorkloadReference{Name: "web", UID: w.UID}))
			g.Expect(wd.Spec.ScaleSettings.MinReplicas).To(gomega.Equal(int32(2)))
			g.Expect(wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image).To(gomega.Equal("ghcr.io/example/app:1.0"))
		}
	}, timeout, interval).Should(gomega.Succeed())

	// Labels and replicas other writers set survive an update.
	dfw := deploymentsOf(g, projectA, w)["DFW"]
	patch := client.MergeFrom(dfw.DeepCopy())
	dfw.Labels["team"] = "platform"
	g.Expect(clients[projectA].Patch(context.Background(), &dfw, patch)).To(gomega.Succeed())

	// Update: a new image reaches every deployment; a new placement and
	// city get theirs.
	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/example/app:2.0"
		w.Spec.Placements = append(w.Spec.Placements, computev1alpha.WorkloadPlacement{
			Name: "batch", CityCodes: []string{"SIN"},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 1},
		})
	})
	w = getWorkload(g, projectA, w)
	g.Eventually(func(g gomega.Gomega) {
		wds := deploymentsOf(g, projectA, w)
		g.Expect(cityKeys(wds)).To(gomega.ConsistOf("edge/DFW", "edge/LHR", "batch/SIN"))
		for _, wd := range wds {
			g.Expect(wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image).To(gomega.Equal("ghcr.io/example/app:2.0"))
		}
		g.Expect(wds["edge/DFW"].Labels).To(gomega.HaveKeyWithValue("team", "platform"))
	}, timeout, interval).Should(gomega.Succeed())

	// Delete: a city removed from a placement loses its deployment.
	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].CityCodes = []string{"DFW"}
	})
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectA, w))).To(gomega.ConsistOf("edge/DFW", "batch/SIN"))
	}, timeout, interval).Should(gomega.Succeed())

	// Status lists every placement and city, sorted.
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Deployments).To(gomega.Equal(int32(2)))
		g.Expect(cur.Status.Placements).To(gomega.HaveLen(2))
		g.Expect(cur.Status.Placements[0].Name).To(gomega.Equal("batch"))
		g.Expect(cur.Status.Placements[1].Name).To(gomega.Equal("edge"))
		g.Expect(cur.Status.Placements[1].Cities).To(gomega.HaveLen(1))
		g.Expect(cur.Status.Placements[1].Cities[0].DeploymentName).To(gomega.Equal(names.LocationDeploymentName("web", w.UID, "edge", "DFW", locationNamespace, "dfw-1")))
		g.Expect(cur.Status.Placements[1].Cities[0].Location).To(gomega.Equal(&computev1alpha.LocationReference{Namespace: locationNamespace, Name: "dfw-1"}))
	}, timeout, interval).Should(gomega.Succeed())
}

func TestCitiesThatAreNotBoundAreReportedAndBindingThemCreatesTheirDeployment(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	lhr := bindCity(t, projectA, ns, "LHR", true)
	w := create(t, projectA, makeWorkload("api", ns).withPlacement("edge", 1, "DFW", "LHR").build())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectA, w))).To(gomega.ConsistOf("DFW", "LHR"))
	}, timeout, interval).Should(gomega.Succeed())

	// The project loses LHR: its deployment goes and the city says why.
	unbind(t, projectA, ns, lhr)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectA, w))).To(gomega.ConsistOf("DFW"))
		cs, ok := cityStatus(getWorkload(g, projectA, w), "edge", "LHR")
		g.Expect(ok).To(gomega.BeTrue())
		g.Expect(cs.Reason).To(gomega.Equal(computev1alpha.ReasonLocationNotBound))
		g.Expect(cs.DeploymentName).To(gomega.BeEmpty())
		g.Expect(cs.Message).To(gomega.ContainSubstring("city LHR is not bound to this project"))
		g.Expect(cs.Message).To(gomega.ContainSubstring("bound cities: DFW"))
	}, timeout, interval).Should(gomega.Succeed())

	// Binding it again creates the missing deployment.
	createBinding(t, projectA, ns, lhr)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectA, w))).To(gomega.ConsistOf("DFW", "LHR"))
	}, timeout, interval).Should(gomega.Succeed())
}

func TestACityWhoseLocationIsNotReadyGetsItsDeploymentOnceReady(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectB)
	bindCity(t, projectB, ns, "DFW", true)
	cdg := bindCity(t, projectB, ns, "CDG", false)
	w := create(t, projectB, makeWorkload("api", ns).withPlacement("edge", 1, "DFW", "CDG").build())

	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectB, w))).To(gomega.ConsistOf("DFW"))
		cs, ok := cityStatus(getWorkload(g, projectB, w), "edge", "CDG")
		g.Expect(ok).To(gomega.BeTrue())
		g.Expect(cs.Reason).To(gomega.Equal(computev1alpha.ReasonLocationNotReady))
		g.Expect(cs.Message).To(gomega.ContainSubstring("the cell is drained for maintenance"))
	}, timeout, interval).Should(gomega.Succeed())

	setLocationReady(t, projectB, cdg, true)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectB, w))).To(gomega.ConsistOf("DFW", "CDG"))
	}, timeout, interval).Should(gomega.Succeed())
}

func TestStatusAggregatesDeploymentsAndWaitsForEveryCell(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	w := create(t, projectA, makeWorkload("shop", ns).withPlacement("edge", 2, "DFW", "LHR").build())

	var wds map[string]computev1alpha.WorkloadDeployment
	g.Eventually(func(g gomega.Gomega) {
		wds = deploymentsOf(g, projectA, w)
		g.Expect(wds).To(gomega.HaveLen(2))
	}, timeout, interval).Should(gomega.Succeed())

	// No cell has reported: the generation is not observed and the
	// deployments are pending.
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Placements).To(gomega.HaveLen(1))
		progressing := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionProgressing)
		g.Expect(progressing).NotTo(gomega.BeNil())
		g.Expect(progressing.Reason).To(gomega.Equal(computev1alpha.ReasonDeploymentPending))
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(getWorkload(g, projectA, w).Status.ObservedGeneration).To(gomega.BeZero())

	// One cell reports: still not observed.
	reportAsCell(t, projectA, wds["DFW"], cellReport{desired: 2, ready: 0, reason: computev1alpha.ReasonPendingQuota})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		cs, _ := cityStatus(cur, "edge", "DFW")
		g.Expect(cs.Reason).To(gomega.Equal(computev1alpha.ReasonPendingQuota))
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(getWorkload(g, projectA, w).Status.ObservedGeneration).To(gomega.BeZero())

	// Both report, nothing ready: the worst blocking reason wins.
	reportAsCell(t, projectA, wds["LHR"], cellReport{desired: 2, ready: 0, reason: computev1alpha.ReasonImageUnavailable})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.ObservedGeneration).To(gomega.Equal(cur.Generation))
		avail := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(gomega.BeNil())
		g.Expect(avail.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(avail.Reason).To(gomega.Equal(computev1alpha.ReasonImageUnavailable))
		g.Expect(avail.Message).To(gomega.HavePrefix("edge/LHR: "))
		g.Expect(avail.Message).To(gomega.ContainSubstring("edge/DFW (PendingQuota)"))
	}, timeout, interval).Should(gomega.Succeed())

	// Replicas become ready: counts add up across cities and placements.
	reportAsCell(t, projectA, wds["DFW"], cellReport{desired: 2, ready: 2})
	reportAsCell(t, projectA, wds["LHR"], cellReport{desired: 2, ready: 1})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.ReplicaCounts).To(gomega.Equal(computev1alpha.ReplicaCounts{
			Replicas: 4, CurrentReplicas: 3, UpdatedReplicas: 4, ReadyReplicas: 3, DesiredReplicas: 4,
		}))
		g.Expect(cur.Status.Placements[0].ReplicaCounts.ReadyReplicas).To(gomega.Equal(int32(3)))
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, computev1alpha.ConditionAvailable)).To(gomega.BeTrue())
		cs, _ := cityStatus(cur, "edge", "LHR")
		g.Expect(cs.Available).To(gomega.BeTrue())
		g.Expect(cs.ReadyReplicas).To(gomega.Equal(int32(1)))
	}, timeout, interval).Should(gomega.Succeed())

	// A new generation is not observed until every cell reports it.
	update(t, projectA, w, func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = 3 })
	w = getWorkload(g, projectA, w)
	g.Eventually(func(g gomega.Gomega) {
		for _, wd := range deploymentsOf(g, projectA, w) {
			g.Expect(wd.Spec.ScaleSettings.MinReplicas).To(gomega.Equal(int32(3)))
		}
		cur := getWorkload(g, projectA, w)
		cs, _ := cityStatus(cur, "edge", "DFW")
		g.Expect(cs.Reason).To(gomega.Equal(computev1alpha.ReasonDeploymentPending))
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(getWorkload(g, projectA, w).Status.ObservedGeneration).To(gomega.Equal(w.Generation - 1))

	wds = deploymentsOf(g, projectA, w)
	reportAsCell(t, projectA, wds["DFW"], cellReport{desired: 3, ready: 3})
	g.Expect(getWorkload(g, projectA, w).Status.ObservedGeneration).To(gomega.Equal(w.Generation - 1))
	reportAsCell(t, projectA, wds["LHR"], cellReport{desired: 3, ready: 3})
	g.Eventually(func(g gomega.Gomega) {
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.ObservedGeneration).To(gomega.Equal(w.Generation))
		g.Expect(cur.Status.ReadyReplicas).To(gomega.Equal(int32(6)))
	}, timeout, interval).Should(gomega.Succeed())
}

func TestDeletingAWorkloadDeletesItsDeploymentsThroughTheGarbageCollector(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	w := create(t, projectA, makeWorkload("gone", ns).withPlacement("edge", 1, "DFW", "LHR").build())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(deploymentsOf(g, projectA, w)).To(gomega.HaveLen(2))
		g.Expect(revisionsOf(g, projectA, w)).To(gomega.HaveLen(1))
	}, timeout, interval).Should(gomega.Succeed())

	g.Expect(clients[projectA].Delete(context.Background(), w)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(deploymentsOf(g, projectA, w)).To(gomega.BeEmpty())
		g.Expect(revisionsOf(g, projectA, w)).To(gomega.BeEmpty())
	}, timeout, interval).Should(gomega.Succeed())
}

func TestADeploymentOfAnotherWorkloadIsNeverAdoptedOrOverwritten(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectA, ns, "LHR", true)
	w := create(t, projectA, makeWorkload("web", ns).withPlacement("edge", 1, "DFW").build())

	// Someone else holds the name the Workload will want for LHR.
	squatter := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: names.LocationDeploymentName("web", w.UID, "edge", "LHR", locationNamespace, "lhr-1"), Namespace: ns},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "other", UID: types.UID("not-the-workload")},
			PlacementName: "edge", CityCode: "LHR",
			Template:      w.Spec.Template,
			ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 7},
		},
	}
	g.Expect(clients[projectA].Create(ctx, squatter)).To(gomega.Succeed())

	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].CityCodes = []string{"DFW", "LHR"}
	})
	g.Eventually(func(g gomega.Gomega) {
		cs, ok := cityStatus(getWorkload(g, projectA, w), "edge", "LHR")
		g.Expect(ok).To(gomega.BeTrue())
		g.Expect(cs.Reason).To(gomega.Equal(computev1alpha.ReasonDeploymentConflict))
		g.Expect(cs.Message).To(gomega.ContainSubstring("belongs to another Workload"))
	}, timeout, interval).Should(gomega.Succeed())

	cur := &computev1alpha.WorkloadDeployment{}
	g.Expect(clients[projectA].Get(ctx, client.ObjectKeyFromObject(squatter), cur)).To(gomega.Succeed())
	g.Expect(cur.Spec.ScaleSettings.MinReplicas).To(gomega.Equal(int32(7)))
	g.Expect(cur.Spec.WorkloadRef.UID).To(gomega.Equal(types.UID("not-the-workload")))
	g.Expect(metav1.GetControllerOf(cur)).To(gomega.BeNil())

	// Deleting the Workload leaves it alone too.
	g.Expect(clients[projectA].Delete(ctx, w)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		err := clients[projectA].Get(ctx, client.ObjectKeyFromObject(w), &computev1alpha.Workload{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue())
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(clients[projectA].Get(ctx, client.ObjectKeyFromObject(squatter), cur)).To(gomega.Succeed())
}

func TestProjectPlanesAreIsolated(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	// The same namespace and Workload name in both planes, with different
	// cities bound.
	ns := newNamespace(t, projectA)
	g.Expect(clients[projectB].Create(ctx, namespaceObject(ns))).To(gomega.Succeed())
	bindCity(t, projectA, ns, "DFW", true)
	bindCity(t, projectB, ns, "LHR", true)

	// Admission checks each plane's own bindings.
	err := clients[projectB].Create(ctx, makeWorkload("web", ns).withPlacement("edge", 1, "DFW").build())
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "DFW is bound in project-a only: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring("enabled cities: LHR"))

	a := create(t, projectA, makeWorkload("web", ns).withPlacement("edge", 1, "DFW").build())
	b := create(t, projectB, makeWorkload("web", ns).withPlacement("edge", 1, "LHR").build())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, projectA, a))).To(gomega.ConsistOf("DFW"))
		g.Expect(cityKeys(deploymentsOf(g, projectB, b))).To(gomega.ConsistOf("LHR"))
	}, timeout, interval).Should(gomega.Succeed())

	// Each plane holds only its own deployments.
	for plane, want := range map[string]string{projectA: "DFW", projectB: "LHR"} {
		var list computev1alpha.WorkloadDeploymentList
		g.Expect(clients[plane].List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
		g.Expect(list.Items).To(gomega.HaveLen(1))
		g.Expect(list.Items[0].Spec.CityCode).To(gomega.Equal(want))
	}

	// Deleting one leaves the other running.
	g.Expect(clients[projectA].Delete(ctx, a)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(deploymentsOf(g, projectA, a)).To(gomega.BeEmpty())
	}, timeout, interval).Should(gomega.Succeed())
	g.Expect(cityKeys(deploymentsOf(g, projectB, b))).To(gomega.ConsistOf("LHR"))
	g.Expect(getWorkload(g, projectB, b).DeletionTimestamp).To(gomega.BeNil())
}

func TestSingleModeServesOneProjectPlane(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, soloPlane)
	bindCity(t, soloPlane, ns, "SIN", true)

	err := clients[soloPlane].Create(context.Background(), makeWorkload("web", ns).withPlacement("edge", 1, "DFW").build())
	g.Expect(isWebhookDenial(err)).To(gomega.BeTrue(), "DFW is not bound: %v", err)
	g.Expect(err.Error()).To(gomega.ContainSubstring("enabled cities: SIN"))

	w := create(t, soloPlane, makeWorkload("web", ns).withPlacement("edge", 1, "SIN").build())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(deploymentsOf(g, soloPlane, w))).To(gomega.ConsistOf("SIN"))
		g.Expect(getWorkload(g, soloPlane, w).Status.CurrentRevision).To(gomega.Equal(int64(1)))
	}, timeout, interval).Should(gomega.Succeed())
}

// TestWithoutAFederationPlaneCompanionsGoNextToTheirSources: a cell that
// runs on the project plane itself (single mode, no hub) still gets the
// referenced data it must hold before an Instance runs.
func TestWithoutAFederationPlaneCompanionsGoNextToTheirSources(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, soloPlane)
	bindCity(t, soloPlane, ns, "SIN", true)
	c := clients[soloPlane]
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		StringData: map[string]string{"password": "s3cret"}})).To(gomega.Succeed())
	w := makeWorkload("web", ns).withPlacement("edge", 1, "SIN").build()
	w.Spec.Template.Spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "db"}}
	create(t, soloPlane, w)
	g.Eventually(func(g gomega.Gomega) {
		companion := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secret.db"}, companion)).To(gomega.Succeed())
		g.Expect(companion.Labels).To(gomega.HaveKeyWithValue(computev1alpha.ReferencedDataLabel, "true"))
		wds := deploymentsOf(g, soloPlane, w)
		g.Expect(wds).To(gomega.HaveKey("SIN"))
		g.Expect(wds["SIN"].Annotations).To(gomega.HaveKeyWithValue(computev1alpha.ExpectedReferencedDataAnnotation, `["Secret/db"]`))
	}, timeout, interval).Should(gomega.Succeed())
	t.Log("deleting the Workload takes the companion away")
	g.Expect(c.Delete(ctx, w)).To(gomega.Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secret.db"}, &corev1.Secret{}))
	}, timeout, interval).Should(gomega.BeTrue())
}
