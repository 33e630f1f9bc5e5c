//go:build e2e

package compute

import (
	"context"

	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// sizes returns the InstanceTypes c serves as name → "cpu/memory".
func sizes(g Gomega, c client.Client) map[string]string {
	var list computev1alpha.InstanceTypeList
	g.Expect(c.List(context.Background(), &list)).To(Succeed())
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.Name] = it.Spec.Resources.CPU.String() + "/" + it.Spec.Resources.Memory.String()
	}
	return out
}

func TestTheInstanceTypeCatalogReachesEveryCell(t *testing.T) {
	g := NewWithT(t)
	want := map[string]string{
		"datumcloud-d1-standard-2":  "1/2Gi",
		"datumcloud-d1-standard-4":  "2/4Gi",
		"datumcloud-d1-standard-8":  "4/8Gi",
		"datumcloud-d1-standard-16": "8/16Gi",
	}
	t.Log("the project serves Datum's standard types, each Ready as the management plane judged it")
	g.Eventually(func(g Gomega) {
		var list computev1alpha.InstanceTypeList
		g.Expect(project.List(t.Context(), &list)).To(Succeed())
		g.Expect(list.Items).To(HaveLen(len(want)))
		for _, it := range list.Items {
			c := meta.FindStatusCondition(it.Status.Conditions, computev1alpha.InstanceTypeConditionReady)
			g.Expect(c).NotTo(BeNil(), "InstanceType %s has no Ready condition", it.Name)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.ObservedGeneration).To(Equal(it.Generation))
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	g.Expect(sizes(g, project)).To(Equal(want))

	t.Log("Karmada carries the hub's catalog to every cell, sizes unchanged")
	g.Expect(sizes(g, hub)).To(Equal(want))
	for _, city := range cities {
		g.Eventually(func(g Gomega) map[string]string { return sizes(g, cells[city]) }).
			WithTimeout(chainWait).WithPolling(poll).Should(Equal(want), "the catalog in %s", city)
	}
}
