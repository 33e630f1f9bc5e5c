//go:build e2e

package compute

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	fedcontroller "github.com/citycells/compute/internal/controller/federation"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
)

// fault is one row of the fault matrix: what breaks, and how it is healed.
type fault struct {
	name   string
	inject func(t *testing.T)
	heal   func(t *testing.T)
	// failover gives the Workload's placement a failover to DFW (one of
	// its own cities) after the shortest toleration; only restricts the
	// row to the change of that name.
	failover bool
	only     string
}

// killFault SIGKILLs a component (a crash) and starts it again with the
// same command line after down.
func killFault(component string, down time.Duration) fault {
	return fault{
		name: "SIGKILL " + component,
		inject: func(t *testing.T) {
			if err := local.StopComponent(component, platform.StopOptions{Kill: true}); err != nil {
				t.Fatalf("failed to kill %s: %v", component, err)
			}
			time.Sleep(down)
		},
		heal: func(t *testing.T) {
			if err := local.StartComponent(t.Context(), component); err != nil {
				t.Fatalf("failed to start %s again: %v", component, err)
			}
		},
	}
}

// partitionFault cuts a city off for d.
func partitionFault(city string, d time.Duration) fault {
	return fault{
		name: fmt.Sprintf("partition %s %s", city, d),
		inject: func(t *testing.T) {
			if err := local.Partition(t.Context(), city, 0, faults.PartitionHang); err != nil {
				t.Fatalf("failed to partition %s: %v", city, err)
			}
			time.Sleep(d)
		},
		heal: func(t *testing.T) {
			if err := local.Heal(t.Context(), city); err != nil {
				t.Fatalf("failed to heal %s: %v", city, err)
			}
		},
	}
}

// failoverFault partitions city for d, past the toleration of a placement
// with failover: its replicas come up in the fallback during the change,
// and drain once the city is back. It runs during the image rollout, so
// the fallback runs the new template.
func failoverFault(city string, d time.Duration) fault {
	f := partitionFault(city, d)
	f.name = fmt.Sprintf("partition %s %s past the toleration, failover on", city, d)
	f.failover, f.only = true, "image rollout"
	return f
}

// matrixRow is what one fault cost.
type matrixRow struct {
	fault, change     string
	converge          time.Duration
	lost, dup, orphan int
	cleanup           time.Duration
	passed            bool
}

// matrix collects the rows for the table printed at the end.
var matrix struct {
	mu   sync.Mutex
	rows []matrixRow
}

// recoveryWait bounds the convergence after a heal.
const recoveryWait = 4 * time.Minute

// change is what the Workload is doing when a fault strikes.
type change struct {
	name string
	// perCity is the replicas each city ends with.
	perCity int32
	apply   func(w *computev1alpha.Workload)
	// underway reports a cell WorkloadDeployment caught mid-change.
	underway func(cellWD *computev1alpha.WorkloadDeployment) bool
}

// changes are the two the matrix runs every fault against: an image
// rollout over 3 cities x 2, and a scale-up from 2 to 3 in each city.
var changes = []change{
	{
		name: "image rollout", perCity: 2,
		apply: func(w *computev1alpha.Workload) {
			w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
		},
		underway: func(wd *computev1alpha.WorkloadDeployment) bool {
			return wd.Status.UpdatedReplicas > 0 && wd.Status.UpdatedReplicas < 2
		},
	},
	{
		name: "scale-up", perCity: 3,
		apply: func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = 3 },
		underway: func(wd *computev1alpha.WorkloadDeployment) bool {
			return wd.Status.DesiredReplicas == 3 && wd.Status.ReadyReplicas < 3
		},
	},
}

// TestFaultMatrix injects each fault in the middle of each change of a
// Workload over 3 cities × 2 (an image rollout, a scale-up to 3), heals it,
// and checks that the change completes with exactly the desired Instances
// at the current template in every plane — nothing lost, duplicated or
// orphaned — and that deleting the Workload afterwards leaves nothing
// behind. It prints the table of converge times (from heal to converged)
// at the end. FAULT_MATRIX_ONLY=<substring> runs the rows whose name
// contains it.
func TestFaultMatrix(t *testing.T) {
	const down = 3 * time.Second
	faults := []fault{
		killFault("compute-manager-"+platform.ProjectPlane(platform.DefaultProject), down),
		killFault("compute-manager-"+platform.CellPlane("LHR"), down),
		killFault("karmada-controller-manager", down),
		killFault("karmada-scheduler", down),
		killFault("kube-apiserver-hub", down),
		killFault("kube-apiserver-"+platform.CellPlane("LHR"), down),
		killFault("compute-quota-"+platform.ProjectPlane(platform.DefaultProject), down),
		// Karmada now and then drops one member's status after the
		// etcd comes back; the federator's status resync brings it back
		// (docs/faults.md, "Karmada after an etcd loss").
		killFault("etcd", down),
		partitionFault("LHR", 60*time.Second),
		failoverFault("LHR", failoverToleration+15*time.Second),
	}
	t.Cleanup(func() { printMatrix(t) })
	only := os.Getenv("FAULT_MATRIX_ONLY")
	for _, c := range changes {
		for _, f := range faults {
			name := f.name + " during " + c.name
			if (only != "" && !strings.Contains(name, only)) || (f.only != "" && f.only != c.name) {
				continue
			}
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) { runFaultRow(t, f, c) })
		}
	}
}

// runFaultRow runs one fault during one change of a fresh Workload.
func runFaultRow(t *testing.T, f fault, c change) {
	g := NewWithT(t)
	ctx := t.Context()
	row := matrixRow{fault: f.name, change: c.name}
	defer func() {
		row.passed = !t.Failed()
		matrix.mu.Lock()
		matrix.rows = append(matrix.rows, row)
		matrix.mu.Unlock()
	}()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	defer func() {
		if t.Failed() {
			dumpChain(t, ns, row)
		}
	}()
	b := makeWorkload(ns.name, "matrix").withPlacement("edge", 2, cities...)
	if f.failover {
		b.withFailover("dfw")
		b.w.Spec.Placements[0].Failover.AllowPlacementLocations = true
	}
	w := b.create(t)
	expectAvailable(t, w, counts{deployments: 3, replicas: 6, ready: 6, desired: 6, updated: 6})

	t.Logf("the %s starts in every city", c.name)
	updateWorkload(t, w, c.apply)
	g.Eventually(func(g Gomega) bool {
		for _, wd := range deploymentsOf(g, w) {
			cellWD := &computev1alpha.WorkloadDeployment{}
			if err := cells[wd.Spec.CityCode].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: wd.Name}, cellWD); err != nil {
				continue
			}
			if c.underway(cellWD) {
				return true
			}
		}
		return false
	}).WithTimeout(chainWait).WithPolling(50 * time.Millisecond).Should(BeTrue())

	t.Logf("%s, mid-%s", f.name, c.name)
	f.inject(t)
	if f.failover {
		// Past the toleration: the city's replicas run in the fallback.
		g.Expect(fallbackDeployments(g, w)).To(HaveLen(1), "no fallback after %s", f.name)
	}
	f.heal(t)
	healed := time.Now()

	t.Logf("the %s completes; every plane holds exactly the desired Instances at the current template", c.name)
	total := 3 * c.perCity
	// Recovery gets a longer bound than a healthy chain: after a
	// platform-wide fault (etcd) every informer of every component and
	// apiserver backs off up to 30 s per failed relist, and several sit
	// in a row on the path. The table shows what it took.
	expectAvailableWithin(t, w, counts{deployments: 3, replicas: total, ready: total, desired: total, updated: total}, recoveryWait)
	var last planeCounts
	g.Eventually(func(g Gomega) {
		last = countPlanes(g, ns, w, c.perCity)
		g.Expect(last.problems()).To(BeEmpty())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	row.converge = time.Since(healed)
	row.lost, row.dup, row.orphan = last.lost, last.dup, last.orphan

	t.Log("deleting the Workload leaves nothing behind in any plane")
	deleted := time.Now()
	g.Expect(project.Delete(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(leftovers(g, ns)).To(BeEmpty())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	row.cleanup = time.Since(deleted)
}

// dumpChain logs, for a failed row, what every plane says about the row's
// WorkloadDeployments and Workload: enough to tell which hop stalled.
func dumpChain(t *testing.T, ns projectNamespace, row matrixRow) {
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "chain of %s during %s:\n", row.fault, row.change)
	ws := &computev1alpha.WorkloadList{}
	if err := project.List(ctx, ws, client.InNamespace(ns.name)); err == nil {
		for _, w := range ws.Items {
			fmt.Fprintf(&b, "  Workload %s gen %d observed %d counts %+v conditions %s\n", w.Name, w.Generation,
				w.Status.ObservedGeneration, w.Status.ReplicaCounts, conditionSummary(w.Status.Conditions))
		}
	}
	planes := []struct {
		name string
		c    client.Client
		ns   string
	}{{"project", project, ns.name}, {"hub", hub, ns.hub}}
	for _, city := range cities {
		planes = append(planes, struct {
			name string
			c    client.Client
			ns   string
		}{"cell " + city, cells[city], ns.hub})
	}
	for _, pl := range planes {
		wds := &computev1alpha.WorkloadDeploymentList{}
		if err := pl.c.List(ctx, wds, client.InNamespace(pl.ns)); err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", pl.name, err)
			continue
		}
		for _, wd := range wds.Items {
			fmt.Fprintf(&b, "  %s WD %s gen %d observed %d upstream-gen %q counts %+v conditions %s\n", pl.name, wd.Name,
				wd.Generation, wd.Status.ObservedGeneration, wd.Annotations[fedcontroller.UpstreamGenerationAnnotation],
				wd.Status.ReplicaCounts, conditionSummary(wd.Status.Conditions))
		}
		insts := &computev1alpha.InstanceList{}
		if err := pl.c.List(ctx, insts, client.InNamespace(pl.ns)); err == nil {
			for _, in := range insts.Items {
				fmt.Fprintf(&b, "    Instance %s gates %d conditions %s\n", in.Name, len(gatesOf(&in)), conditionSummary(in.Status.Conditions))
			}
		}
	}
	dumpKarmada(ctx, &b, ns)
	t.Log(b.String())
}

// dumpKarmada adds to b what Karmada holds between the hub copies and the
// cells: each ResourceBinding's aggregated status per cluster and each
// Work's Applied condition and collected status, to tell the work-status
// hop (member → Work) from the binding hop (Work → hub copy).
func dumpKarmada(ctx context.Context, b *strings.Builder, ns projectNamespace) {
	rbs := &unstructured.UnstructuredList{}
	rbs.SetGroupVersionKind(schema.GroupVersionKind{Group: "work.karmada.io", Version: "v1alpha2", Kind: "ResourceBindingList"})
	if err := hub.List(ctx, rbs, client.InNamespace(ns.hub)); err != nil {
		fmt.Fprintf(b, "  ResourceBindings: %v\n", err)
	}
	for _, rb := range rbs.Items {
		items, _, _ := unstructured.NestedSlice(rb.Object, "status", "aggregatedStatus")
		fmt.Fprintf(b, "  ResourceBinding %s rv %s aggregated %v\n", rb.GetName(), rb.GetResourceVersion(), items)
	}
	works := &unstructured.UnstructuredList{}
	works.SetGroupVersionKind(schema.GroupVersionKind{Group: "work.karmada.io", Version: "v1alpha1", Kind: "WorkList"})
	if err := hub.List(ctx, works); err != nil {
		fmt.Fprintf(b, "  Works: %v\n", err)
	}
	for _, w := range works.Items {
		if w.GetAnnotations()["resourcebinding.karmada.io/namespace"] != ns.hub {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		manifests, _, _ := unstructured.NestedSlice(w.Object, "status", "manifestStatuses")
		fmt.Fprintf(b, "  Work %s/%s gen %d rv %s conditions %v manifestStatuses %v\n", w.GetNamespace(), w.GetName(),
			w.GetGeneration(), w.GetResourceVersion(), conds, manifests)
	}
}

// conditionSummary renders conditions as Type=Status(Reason).
func conditionSummary(conds []metav1.Condition) string {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, " ")
}

// planeCounts compares every plane with what the Workload wants.
type planeCounts struct {
	lost, dup, orphan int
	details           []string
}

// problems lists what is off.
func (c planeCounts) problems() []string { return c.details }

// countPlanes counts, for each city, the cell Instances, write-backs and
// projections against the perCity desired at the current template, plus
// the hub copies, policies and ResourceClaims.
func countPlanes(g Gomega, ns projectNamespace, w *computev1alpha.Workload, perCity int32) planeCounts {
	var c planeCounts
	note := func(kind *int, format string, args ...any) {
		*kind++
		c.details = append(c.details, fmt.Sprintf(format, args...))
	}
	wds := deploymentsOf(g, w)
	if len(wds) != 3 {
		note(&c.lost, "%d project WorkloadDeployments, want 3", len(wds))
	}
	for _, wd := range wds {
		city := wd.Spec.CityCode
		for _, plane := range []struct {
			name string
			c    client.Client
			ns   string
		}{{"cell " + city, cells[city], ns.hub}, {"hub", hub, ns.hub}, {"project", project, ns.name}} {
			insts := instancesIn(g, plane.c, plane.ns, wd.Name)
			seen := map[string]int{}
			for i := range insts {
				seen[insts[i].Labels[computev1alpha.InstanceIndexLabel]]++
				if insts[i].Spec.Controller == nil || insts[i].Spec.Controller.TemplateHash != wd.Status.TemplateHash {
					note(&c.orphan, "%s: Instance %s is not at the current template", plane.name, insts[i].Name)
				}
			}
			for _, ord := range seq(int(perCity)) {
				switch n := seen[ord]; {
				case n == 0:
					note(&c.lost, "%s: no Instance %s of %s", plane.name, ord, wd.Name)
				case n > 1:
					note(&c.dup, "%s: %d Instances %s of %s", plane.name, n, ord, wd.Name)
				}
				delete(seen, ord)
			}
			for ord, n := range seen {
				note(&c.orphan, "%s: %d Instances with index %q of %s", plane.name, n, ord, wd.Name)
			}
		}
	}
	hubWDs := listed(g, hub, ns.hub, &computev1alpha.WorkloadDeploymentList{})
	if len(hubWDs) != 3 {
		note(&c.orphan, "%d hub WorkloadDeployments, want 3", len(hubWDs))
	}
	if p := policyNames(g, ns.hub); len(p) != 3 {
		note(&c.orphan, "PropagationPolicies %v, want one per city", p)
	}
	claims := &quotav1alpha1.ResourceClaimList{}
	g.Expect(quotaReader().List(context.Background(), claims, client.InNamespace(ns.name))).To(Succeed())
	if want := 3 * int(perCity); len(claims.Items) != want {
		note(&c.orphan, "%d ResourceClaims, want %d", len(claims.Items), want)
	}
	return c
}

// leftovers lists what a deleted Workload left in any plane.
func leftovers(g Gomega, ns projectNamespace) []string {
	var out []string
	for city, c := range cells {
		if n := len(listed(g, c, ns.hub, &computev1alpha.InstanceList{})); n > 0 {
			out = append(out, fmt.Sprintf("%d Instances in cell %s", n, city))
		}
		if n := len(listed(g, c, ns.hub, &computev1alpha.WorkloadDeploymentList{})); n > 0 {
			out = append(out, fmt.Sprintf("%d WorkloadDeployments in cell %s", n, city))
		}
	}
	if n := len(listed(g, hub, ns.hub, &computev1alpha.InstanceList{})); n > 0 {
		out = append(out, fmt.Sprintf("%d write-backs in the hub", n))
	}
	if n := len(listed(g, hub, ns.hub, &computev1alpha.WorkloadDeploymentList{})); n > 0 {
		out = append(out, fmt.Sprintf("%d WorkloadDeployments in the hub", n))
	}
	if n := len(listed(g, project, ns.name, &computev1alpha.InstanceList{})); n > 0 {
		out = append(out, fmt.Sprintf("%d projections in the project", n))
	}
	claims := &quotav1alpha1.ResourceClaimList{}
	g.Expect(quotaReader().List(context.Background(), claims, client.InNamespace(ns.name))).To(Succeed())
	if n := len(claims.Items); n > 0 {
		out = append(out, fmt.Sprintf("%d ResourceClaims in the project", n))
	}
	return out
}

// quotaReader is a client of the project plane that knows the quota kinds.
var quotaReader = sync.OnceValue(func() client.Client {
	s := scheme()
	if err := quotav1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	c, err := client.New(local.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s})
	if err != nil {
		panic(err)
	}
	return c
})

// printMatrix prints the table of the rows run.
func printMatrix(t *testing.T) {
	matrix.mu.Lock()
	defer matrix.mu.Unlock()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "FAULT\tDURING (3 cities)\tCONVERGED AFTER HEAL\tLOST\tDUP\tORPHAN\tCLEANUP AFTER DELETE\tRESULT")
	for _, r := range matrix.rows {
		result := "pass"
		if !r.passed {
			result = "FAIL"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.fault, r.change, r.converge.Round(100*time.Millisecond),
			r.lost, r.dup, r.orphan, r.cleanup.Round(100*time.Millisecond), result)
	}
	_ = tw.Flush()
	t.Logf("fault matrix:\n%s", b.String())
}

// gatesOf returns an Instance's scheduling gates.
func gatesOf(in *computev1alpha.Instance) []computev1alpha.SchedulingGate {
	if in.Spec.Controller == nil {
		return nil
	}
	return in.Spec.Controller.SchedulingGates
}
