package quotaflow

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/standin/quotaservice"
	"github.com/citycells/compute/test/clitest"
)

// settle bounds how long the flow may take to reach a state.
const settle = 30 * time.Second

// project is a project of the tests: its namespace in the quota plane
// (where claims and its grant live) and the cell namespace its Instances
// run in, labelled as Karmada propagates the federation labels.
type project struct {
	name      string
	namespace string
	cellNS    string
	grant     *quotav1alpha1.ResourceGrant
}

// newProject creates a project with a grant of instances, vCPU and memory,
// and a cell namespace whose Instances belong to it.
func newProject(t *testing.T, instances int64, vcpu, memory string) *project {
	t.Helper()
	ctx := context.Background()
	p := &project{name: "p-" + rand.String(6)}
	p.namespace = p.name
	p.cellNS = "ns-" + rand.String(8)
	if err := projectKube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace}}); err != nil {
		t.Fatal(err)
	}
	// The project runs in the city the cell serves (cell-flow: FLOW), so
	// compute-quota grants the cell's claims here.
	if err := clitest.BindCities(ctx, projectKube, p.namespace, quotaservice.CellCity(cellName)); err != nil {
		t.Fatal(err)
	}
	amounts, err := quotaservice.ComputeGrant(instances, vcpu, memory)
	if err != nil {
		t.Fatal(err)
	}
	p.grant = quotaservice.DefaultGrantFor(p.name, "compute", p.namespace, amounts)
	if err := projectKube.Create(ctx, p.grant); err != nil {
		t.Fatal(err)
	}
	if err := cellKube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.cellNS, Labels: map[string]string{
		computev1alpha.UpstreamClusterNameLabel: names.UpstreamClusterName(p.name),
		computev1alpha.UpstreamNamespaceLabel:   p.namespace,
	}}}); err != nil {
		t.Fatal(err)
	}
	return p
}

// setGrant changes the project's grant.
func (p *project) setGrant(t *testing.T, instances int64, vcpu, memory string) {
	t.Helper()
	amounts, err := quotaservice.ComputeGrant(instances, vcpu, memory)
	if err != nil {
		t.Fatal(err)
	}
	want := quotaservice.DefaultGrantFor(p.name, p.grant.Name, p.namespace, amounts)
	NewWithT(t).Eventually(func() error {
		g := &quotav1alpha1.ResourceGrant{}
		if err := projectKube.Get(context.Background(), client.ObjectKeyFromObject(p.grant), g); err != nil {
			return err
		}
		g.Spec.Allowances = want.Spec.Allowances
		return projectKube.Update(context.Background(), g)
	}, settle).Should(Succeed())
}

// newWD creates a Parallel WorkloadDeployment of d1-standard-2 Instances
// (1 vCPU, 2 GiB each) in the project's cell namespace.
func (p *project) newWD(t *testing.T, name string, replicas int32) *computev1alpha.WorkloadDeployment {
	t.Helper()
	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.cellNS, Name: name},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: name, UID: types.UID("workload-" + rand.String(8))},
			PlacementName: "default",
			CityCode:      "DFW",
			Replicas:      ptr.To(replicas),
			Template: computev1alpha.InstanceTemplateSpec{
				Metadata: computev1alpha.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
					Sandbox: &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{
						Name: "app", Image: "ghcr.io/citycells/hello:1.0",
					}}},
				}},
			},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{
				MinReplicas:              1,
				InstanceManagementPolicy: computev1alpha.ParallelInstanceManagementPolicy,
			},
		},
	}
	if err := cellKube.Create(context.Background(), wd); err != nil {
		t.Fatalf("failed to create WorkloadDeployment: %v", err)
	}
	return wd
}

// instances lists the project's Instances in the cell, sorted by name.
func (p *project) instances(g Gomega) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(cellKube.List(context.Background(), list, client.InNamespace(p.cellNS))).To(Succeed())
	slices.SortFunc(list.Items, func(a, b computev1alpha.Instance) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// claims lists the project's claims in its quota plane.
func (p *project) claims(g Gomega) []quotav1alpha1.ResourceClaim {
	list := &quotav1alpha1.ResourceClaimList{}
	g.Expect(projectKube.List(context.Background(), list, client.InNamespace(p.namespace))).To(Succeed())
	return list.Items
}

// condition returns a condition or an empty one.
func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// gated reports whether an Instance still carries the Quota gate.
func gated(inst *computev1alpha.Instance) bool {
	if inst.Spec.Controller == nil {
		return false
	}
	return slices.ContainsFunc(inst.Spec.Controller.SchedulingGates, func(g computev1alpha.SchedulingGate) bool {
		return g.Name == computev1alpha.QuotaSchedulingGate
	})
}

// split sorts live Instances into granted (QuotaGranted True for their
// generation and no Quota gate) and denied (QuotaExceeded and still gated)
// ones, by name; anything else lands in neither.
func split(insts []computev1alpha.Instance) (granted, denied []string) {
	for i := range insts {
		inst := &insts[i]
		if inst.DeletionTimestamp != nil {
			continue
		}
		q := condition(inst.Status.Conditions, computev1alpha.ConditionQuotaGranted)
		switch {
		case q.Status == metav1.ConditionTrue && q.Reason == computev1alpha.ReasonQuotaAvailable &&
			q.ObservedGeneration == inst.Generation && !gated(inst):
			granted = append(granted, inst.Name)
		case q.Status == metav1.ConditionFalse && q.Reason == computev1alpha.ReasonQuotaExceeded && gated(inst):
			denied = append(denied, inst.Name)
		}
	}
	return granted, denied
}
