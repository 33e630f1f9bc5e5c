//go:build e2e

package compute

import (
	"context"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	fedcontroller "github.com/citycells/compute/internal/controller/federation"
)

// TestDriftInEveryPlaneIsCorrected makes, one after the other, each kind of
// drift an operator's slip or a script can cause on a Workload running 2
// replicas in DFW, and checks that every plane returns to what the
// Workload says: exactly Instances 0 and 1 at the Workload's template in
// the cell, the hub and the project, the hub copy and the city's
// PropagationPolicy in place, the cell WorkloadDeployment carrying the
// project's spec. The time each took is logged.
func TestDriftInEveryPlaneIsCorrected(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "drift").withPlacement("edge", 2, "DFW").create(t)
	expectAvailable(t, w, counts{deployments: 1, replicas: 2, ready: 2, desired: 2, updated: 2})
	wds := deploymentsOf(g, w)
	g.Expect(wds).To(HaveLen(1))
	name := wds[0].Name
	cell := cells["DFW"]
	key := func(namespace string) client.ObjectKey { return client.ObjectKey{Namespace: namespace, Name: name} }

	// patchWD changes a WorkloadDeployment in a plane with a merge patch.
	patchWD := func(t *testing.T, c client.Client, namespace string, change func(*computev1alpha.WorkloadDeployment)) {
		t.Helper()
		NewWithT(t).Eventually(func() error {
			cur := &computev1alpha.WorkloadDeployment{}
			if err := c.Get(context.Background(), key(namespace), cur); err != nil {
				return err
			}
			before := cur.DeepCopy()
			change(cur)
			return c.Patch(context.Background(), cur, client.MergeFrom(before))
		}).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	}
	deleteObj := func(t *testing.T, c client.Client, obj client.Object) {
		t.Helper()
		NewWithT(t).Expect(c.Delete(context.Background(), obj)).To(Succeed())
	}
	inst := func(namespace, ordinal string) *computev1alpha.Instance {
		i := &computev1alpha.Instance{}
		i.Namespace, i.Name = namespace, name+"-"+ordinal
		return i
	}

	drifts := []struct {
		name string
		make func(t *testing.T)
	}{
		{"the hub copy is deleted", func(t *testing.T) {
			wd := &computev1alpha.WorkloadDeployment{}
			wd.Namespace, wd.Name = ns.hub, name
			deleteObj(t, hub, wd)
		}},
		{"the cell WorkloadDeployment is scaled by hand", func(t *testing.T) {
			patchWD(t, cell, ns.hub, func(wd *computev1alpha.WorkloadDeployment) { wd.Spec.Replicas = ptr.To[int32](4) })
		}},
		{"the cell WorkloadDeployment's template is edited by hand", func(t *testing.T) {
			patchWD(t, cell, ns.hub, func(wd *computev1alpha.WorkloadDeployment) {
				wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:tampered"
			})
		}},
		{"a cell Instance is deleted", func(t *testing.T) { deleteObj(t, cell, inst(ns.hub, "0")) }},
		// Only compute (and the configured projection writers, the garbage
		// collector and the namespace controller) may delete a projection:
		// the admission webhook refuses everyone else, the planes' admin
		// included. So the drift is made as the management role's own
		// identity, standing in for any writer.
		{"a projection is deleted", func(t *testing.T) { deleteObj(t, projectionWriter(t), inst(ns.name, "1")) }},
		// Not its replicas: the scale subresource is the autoscaler's, and
		// the Workload controller keeps what it sets.
		{"the project WorkloadDeployment's template is edited by hand", func(t *testing.T) {
			patchWD(t, project, ns.name, func(wd *computev1alpha.WorkloadDeployment) {
				wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:tampered"
			})
		}},
		{"the city's PropagationPolicy is deleted", func(t *testing.T) {
			p := &policyv1alpha1.PropagationPolicy{}
			p.Namespace, p.Name = ns.hub, fedcontroller.CityPolicyName("DFW")
			deleteObj(t, hub, p)
		}},
	}
	want := deploymentsOf(g, w)[0].Spec
	for _, d := range drifts {
		t.Run(d.name, func(t *testing.T) {
			g := NewWithT(t)
			d.make(t)
			began := time.Now()
			expectAvailable(t, w, counts{deployments: 1, replicas: 2, ready: 2, desired: 2, updated: 2})
			g.Eventually(func(g Gomega) {
				projectWDs := deploymentsOf(g, w)
				g.Expect(projectWDs).To(HaveLen(1))
				g.Expect(projectWDs[0].Spec).To(Equal(want), "project WorkloadDeployment")
				for plane, c := range map[string]client.Client{"hub": hub, "cell": cell} {
					cur := &computev1alpha.WorkloadDeployment{}
					g.Expect(c.Get(context.Background(), key(ns.hub), cur)).To(Succeed(), plane)
					// Karmada writes the replicas it schedules into the
					// member's spec.replicas (replicaRevision): compare
					// what each plane would run.
					g.Expect(ptr.Deref(cur.Spec.Replicas, cur.Spec.ScaleSettings.MinReplicas)).To(Equal(int32(2)), plane)
					g.Expect(cur.Spec.Template).To(Equal(want.Template), plane)
				}
				g.Expect(policyNames(g, ns.hub)).To(Equal([]string{fedcontroller.CityPolicyName("DFW")}))
				hash := projectWDs[0].Status.TemplateHash
				for plane, in := range map[string]struct {
					c  client.Client
					ns string
				}{"cell": {cell, ns.hub}, "hub": {hub, ns.hub}, "project": {project, ns.name}} {
					insts := instancesIn(g, in.c, in.ns, name)
					g.Expect(ordinals(insts)).To(Equal(seq(2)), plane)
					for i := range insts {
						g.Expect(insts[i].Spec.Controller).NotTo(BeNil(), plane)
						g.Expect(insts[i].Spec.Controller.TemplateHash).To(Equal(hash), plane)
						g.Expect(ready(&insts[i])).To(BeTrue(), "%s: %s", plane, insts[i].Name)
					}
				}
			}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
			t.Logf("%s: every plane back to the Workload's spec %s later", d.name, time.Since(began).Round(100*time.Millisecond))
		})
	}
}
