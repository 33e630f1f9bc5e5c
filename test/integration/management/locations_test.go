package management

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// locationsOf returns the Locations of w's deployments, by name.
func locationsOf(g gomega.Gomega, w *computev1alpha.Workload) map[string]computev1alpha.WorkloadDeployment {
	var list computev1alpha.WorkloadDeploymentList
	g.Expect(clients[projectA].List(context.Background(), &list, client.InNamespace(w.Namespace))).To(gomega.Succeed())
	out := map[string]computev1alpha.WorkloadDeployment{}
	for _, wd := range list.Items {
		if wd.Labels[computev1alpha.WorkloadUIDLabel] != string(w.UID) {
			continue
		}
		g.Expect(wd.Spec.LocationRef).NotTo(gomega.BeNil(), "deployment %s has no locationRef", wd.Name)
		g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.LocationTopologyLabel, wd.Spec.LocationRef.Name))
		out[wd.Spec.LocationRef.Name] = wd
	}
	return out
}

// TestTwoLocationsOfACityAreTwoDeploymentsAndASelectorFollowsBindings: a
// selector on the city reaches both DFW Locations (one deployment each,
// both in DFW, each reported with its Location); a selector on another
// topology key picks up a Location when it is bound and lets it go when it
// is unbound.
func TestTwoLocationsOfACityAreTwoDeploymentsAndASelectorFollowsBindings(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	second := ensureNamedLocation(t, projectA, "dfw-edge-2",
		map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW", "topology.datum.net/region": "us-south"}, true)
	createBinding(t, projectA, ns, second)

	w := create(t, projectA, makeWorkload("web", ns).with(func(w *computev1alpha.Workload) {
		w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "edge",
			LocationSelector: &metav1.LabelSelector{MatchLabels: map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW"}},
			ScaleSettings:    computev1alpha.HorizontalScaleSettings{MinReplicas: 1}}}
	}).build())
	g.Eventually(func(g gomega.Gomega) {
		wds := locationsOf(g, w)
		g.Expect(cityKeys(wds)).To(gomega.ConsistOf("dfw-1", second))
		for _, wd := range wds {
			g.Expect(wd.Spec.CityCode).To(gomega.Equal("DFW"))
			g.Expect(wd.Labels).To(gomega.HaveKeyWithValue(computev1alpha.CityCodeTopologyLabel, "DFW"))
		}
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Placements).To(gomega.HaveLen(1))
		var located []string
		for _, c := range cur.Status.Placements[0].Cities {
			g.Expect(c.CityCode).To(gomega.Equal("DFW"))
			g.Expect(c.Location).NotTo(gomega.BeNil())
			located = append(located, c.Location.Name)
		}
		g.Expect(located).To(gomega.Equal([]string{"dfw-1", second}))
	}, timeout, interval).Should(gomega.Succeed())

	t.Log("a selector on region follows the region's Locations as they are bound and unbound")
	update(t, projectA, w, func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].LocationSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"topology.datum.net/region": "us-south"}}
	})
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(locationsOf(g, w))).To(gomega.ConsistOf(second))
	}, timeout, interval).Should(gomega.Succeed())
	third := ensureNamedLocation(t, projectA, "lhr-edge-3",
		map[string]string{networkingv1alpha.CityCodeTopologyKey: "LHR", "topology.datum.net/region": "us-south"}, true)
	createBinding(t, projectA, ns, third)
	g.Eventually(func(g gomega.Gomega) {
		wds := locationsOf(g, w)
		g.Expect(cityKeys(wds)).To(gomega.ConsistOf(second, third))
		g.Expect(wds[third].Spec.CityCode).To(gomega.Equal("LHR"))
	}, timeout, interval).Should(gomega.Succeed())
	unbind(t, projectA, ns, second)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(locationsOf(g, w))).To(gomega.ConsistOf(third))
	}, timeout, interval).Should(gomega.Succeed())
}

// TestANamedLocationThatIsNotBoundSaysSoUntilItIs: a Workload naming a
// Location the project does not have yet is refused by admission; an
// existing one that names it (after the binding went) reports
// LocationNotBound with the bound Locations, and binding it again
// deploys there.
func TestANamedLocationThatIsNotBoundSaysSoUntilItIs(t *testing.T) {
	g := gomega.NewWithT(t)
	ns := newNamespace(t, projectA)
	bindCity(t, projectA, ns, "DFW", true)
	loc := ensureNamedLocation(t, projectA, "gcp-us-south1-a",
		map[string]string{networkingv1alpha.CityCodeTopologyKey: "DFW", "topology.datum.net/region": "us-south1"}, true)

	named := makeWorkload("pinned", ns).with(func(w *computev1alpha.Workload) {
		w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "us",
			Locations:     []computev1alpha.PlacementLocation{{Name: loc}},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 1}}}
	}).build()
	err := clients[projectA].Create(context.Background(), named.DeepCopy())
	g.Expect(err).To(gomega.HaveOccurred())
	g.Expect(err.Error()).To(gomega.ContainSubstring("spec.placements[0].locations[0].name"))
	g.Expect(err.Error()).To(gomega.ContainSubstring("Location gcp-us-south1-a is not bound to this project; bound Locations: dfw-1"))

	createBinding(t, projectA, ns, loc)
	w := create(t, projectA, named)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(cityKeys(locationsOf(g, w))).To(gomega.ConsistOf(loc))
	}, timeout, interval).Should(gomega.Succeed())

	unbind(t, projectA, ns, loc)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(locationsOf(g, w)).To(gomega.BeEmpty())
		cur := getWorkload(g, projectA, w)
		g.Expect(cur.Status.Placements).To(gomega.HaveLen(1))
		g.Expect(cur.Status.Placements[0].Cities).To(gomega.HaveLen(1))
		c := cur.Status.Placements[0].Cities[0]
		g.Expect(c.Reason).To(gomega.Equal(computev1alpha.ReasonLocationNotBound), "%+v", c)
		g.Expect(c.Location).To(gomega.BeNil(), "a Location that is not bound is named by the message")
		g.Expect(c.Message).To(gomega.ContainSubstring("Location gcp-us-south1-a is not bound to this project"))
	}, timeout, interval).Should(gomega.Succeed())
}
