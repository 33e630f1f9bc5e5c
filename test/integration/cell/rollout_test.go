package cell

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// restart sets the restartedAt annotation of a deployment's template, as
// `datumctl compute restart` does through the Workload.
func restart(t *testing.T, wd *computev1alpha.WorkloadDeployment, at string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, computev1alpha.RestartedAtAnnotation, at)
	if err := k8s.Patch(context.Background(), wd.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("failed to restart %s: %v", wd.Name, err)
	}
}

func TestRestartRecreatesEveryInstanceOneAtATime(t *testing.T) {
	for _, policy := range []computev1alpha.InstanceManagementPolicyType{
		computev1alpha.OrderedReadyInstanceManagementPolicy,
		computev1alpha.ParallelInstanceManagementPolicy,
	} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			b := makeWD(ns, "web").replicas(3)
			b.wd.Spec.ScaleSettings.InstanceManagementPolicy = policy
			wd := b.create(t)
			g.Eventually(func(g Gomega) { expectConverged(g, wd, 3) }).Should(Succeed())
			before := getWD(g, wd)
			old := uids(instancesIn(g, ns))

			events := watchInstances(t, ns)
			restart(t, wd, "2026-06-05T12:00:00Z")

			var after *computev1alpha.WorkloadDeployment
			g.Eventually(func(g Gomega) {
				after = expectConverged(g, wd, 3)
				g.Expect(after.Status.TemplateHash).NotTo(Equal(before.Status.TemplateHash))
			}).Should(Succeed())
			for _, inst := range instancesIn(g, ns) {
				g.Expect(inst.UID).NotTo(Equal(old[inst.Name]), "%s was recreated", inst.Name)
				g.Expect(inst.Spec.Controller.TemplateHash).To(Equal(after.Status.TemplateHash))
				g.Expect(inst.Annotations).To(HaveKeyWithValue(computev1alpha.RestartedAtAnnotation, "2026-06-05T12:00:00Z"))
			}

			// One at a time: never fewer than two of the three slots serve,
			// and the replacements go newest ordinal first.
			var replaced []string
			listed := false // the watch starts by listing the three instances
			g.Expect(events.replay(func(ev watch.Event, state map[string]*computev1alpha.Instance) error {
				inst := ev.Object.(*computev1alpha.Instance)
				if listed = listed || len(state) == 3; !listed {
					return nil
				}
				if inst.UID == old[inst.Name] && inst.DeletionTimestamp != nil && ev.Type == watch.Modified && !contains(replaced, inst.Name) {
					replaced = append(replaced, inst.Name)
				}
				ready := 0
				for _, s := range state {
					if isReady(s) {
						ready++
					}
				}
				if ready < 2 {
					return fmt.Errorf("only %d instances were Ready after %s %s", ready, ev.Type, inst.Name)
				}
				return nil
			})).To(Succeed())
			g.Expect(replaced).To(Equal([]string{"web-2", "web-1", "web-0"}))
		})
	}
}

// contains reports whether s holds v.
func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestStrayInstancesAreRemoved(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(2).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())
	wd = getWD(g, wd)
	kept := uids(instancesIn(g, ns))

	stray := func(name string, labels map[string]string) *computev1alpha.Instance {
		return &computev1alpha.Instance{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ns, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(wd, computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadDeploymentKind))},
			},
			Spec: *wd.Spec.Template.Spec.DeepCopy(),
		}
	}
	for _, s := range []*computev1alpha.Instance{
		stray("web-noindex", map[string]string{}),
		stray("web-badindex", map[string]string{computev1alpha.InstanceIndexLabel: "one"}),
		stray("web-duplicate", map[string]string{computev1alpha.InstanceIndexLabel: "0"}),
		stray("web-7", map[string]string{computev1alpha.InstanceIndexLabel: "7"}),
	} {
		g.Expect(k8s.Create(context.Background(), s)).To(Succeed(), s.Name)
	}

	g.Eventually(func(g Gomega) {
		expectConverged(g, wd, 2)
		g.Expect(uids(instancesIn(g, ns))).To(Equal(kept))
	}).Should(Succeed())
}

func TestLabelsAreBackFilledWithoutReplacingInstances(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	wd := makeWD(ns, "web").parallel().replicas(2).create(t)
	g.Eventually(func(g Gomega) { expectConverged(g, wd, 2) }).Should(Succeed())
	insts := instancesIn(g, ns)
	want := map[string]map[string]string{}
	for _, i := range insts {
		want[i.Name] = i.Labels
	}

	// web-0 loses every linking label but its slot; web-1 carries a wrong
	// deployment UID and a label of someone else's.
	stripped := `{"metadata":{"labels":{
		"compute.datumapis.com/workload-uid":null,"compute.datumapis.com/workload-name":null,
		"compute.datumapis.com/workload-deployment-uid":null,"compute.datumapis.com/workload-deployment-name":null,
		"compute.datumapis.com/city-code":null,"compute.datumapis.com/placement-name":null}}}`
	g.Expect(k8s.Patch(context.Background(), &insts[0], client.RawPatch(types.MergePatchType, []byte(stripped)))).To(Succeed())
	wrong := `{"metadata":{"labels":{"compute.datumapis.com/workload-deployment-uid":"someone-else","team":"blue"}}}`
	g.Expect(k8s.Patch(context.Background(), &insts[1], client.RawPatch(types.MergePatchType, []byte(wrong)))).To(Succeed())
	want["web-1"]["team"] = "blue"

	g.Eventually(func(g Gomega) {
		got := instancesIn(g, ns)
		g.Expect(uids(got)).To(Equal(uids(insts)), "back-fill never replaces an instance")
		for _, i := range got {
			g.Expect(i.Labels).To(Equal(want[i.Name]), i.Name)
		}
	}).Should(Succeed())
	expectConverged(g, wd, 2)
}
