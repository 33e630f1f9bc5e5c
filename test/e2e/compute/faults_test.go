//go:build e2e

package compute

import (
	"bytes"
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	localcmd "github.com/citycells/compute/internal/local/cmd"
	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/local/platform"
)

// statusCLI runs `compute-local status` against the platform, as a user
// would, and returns its exit code and stderr.
func statusCLI(t *testing.T) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := localcmd.Main([]string{"status", "--state-dir", local.State().Dir}, localcmd.Streams{Out: &out, Err: &errOut})
	return code, errOut.String()
}

// problemNames lists the names in a status report's problems.
func problemNames(r *platform.StatusReport) []string {
	out := make([]string, 0, len(r.Problems))
	for _, p := range r.Problems {
		out = append(out, p.Name+": "+p.What)
	}
	return out
}

// expectHealthy waits until `compute-local status` exits 0.
func expectHealthy(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		r, err := platform.Status(t.Context(), local.State().Dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Problems).To(BeEmpty())
		code, stderr := statusCLI(t)
		g.Expect(code).To(Equal(localcmd.ExitOK), stderr)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

func TestStatusNamesAStoppedOrFrozenComputeManagerOrQuotaService(t *testing.T) {
	expectHealthy(t)
	for _, name := range []string{
		"compute-quota-" + platform.ProjectPlane(platform.DefaultProject),
		"compute-manager-" + platform.CellPlane("LHR"),
		"compute-manager-" + platform.ProjectPlane(platform.DefaultProject),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()

			t.Log("killed like a crash: status exits 1 and names it as stopped")
			g.Expect(local.StopComponent(name, platform.StopOptions{Kill: true})).To(Succeed())
			code, stderr := statusCLI(t)
			g.Expect(code).To(Equal(localcmd.ExitFailure))
			g.Expect(stderr).To(ContainSubstring(name + ": stopped"))

			t.Log("started again: status is healthy once it is ready")
			g.Expect(local.StartComponent(ctx, name)).To(Succeed())
			expectHealthy(t)

			t.Log("frozen (SIGSTOP): alive, but its readiness endpoint does not answer, so status names it not ready")
			pid := componentPID(t, name)
			g.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
			defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
			r, err := platform.Status(ctx, local.State().Dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.OK).To(BeFalse())
			g.Expect(problemNames(r)).To(ContainElement(name + ": " + platform.ProblemNotReady))
			code, stderr = statusCLI(t)
			g.Expect(code).To(Equal(localcmd.ExitFailure))
			g.Expect(stderr).To(ContainSubstring(name + ": not ready"))
			g.Expect(syscall.Kill(pid, syscall.SIGCONT)).To(Succeed())
			expectHealthy(t)
		})
	}
}

// componentPID returns the recorded pid of a component.
func componentPID(t *testing.T, name string) int {
	t.Helper()
	for _, c := range local.State().Components {
		if c.Name == name {
			return c.PID
		}
	}
	t.Fatalf("no component %s", name)
	return 0
}

// TestAPartitionedCityIsStaleWhileTheOthersScaleAndRoll cuts LHR off for
// 60 s. Meanwhile the Workload and `datumctl-compute status` mark LHR stale
// (the time it took is logged), DFW and SIN scale and roll to a new image,
// a Workload that only runs in LHR is deleted and is gone from the project
// at once, and nothing of LHR is deleted or recreated in any plane. After
// the heal LHR converges to the latest spec and the deleted Workload's
// objects leave its cell.
func TestAPartitionedCityIsStaleWhileTheOthersScaleAndRoll(t *testing.T) {
	const partition = 60 * time.Second
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "islands").withPlacement("edge", 1, cities...).create(t)
	doomed := makeWorkload(ns.name, "doomed").withPlacement("edge", 1, "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 3, replicas: 3, ready: 3, desired: 3, updated: 3})
	expectAvailable(t, doomed, counts{deployments: 1, replicas: 1, ready: 1, desired: 1, updated: 1})
	lhrBefore := cellInstances(g, ns, w, "LHR")
	g.Expect(lhrBefore).To(HaveLen(1))
	hubBefore, projBefore := writeBacksOf(g, ns, w, "LHR"), projectionsOf(g, ns, w, "LHR")
	doomedWDs := deploymentsOf(g, doomed)
	g.Expect(doomedWDs).To(HaveLen(1))

	t.Log("LHR is cut off from the hub and the project; status says so")
	g.Expect(local.Partition(ctx, "LHR", 0, faults.PartitionHang)).To(Succeed())
	cut := time.Now()
	healed := false
	defer func() {
		if !healed {
			_ = local.Heal(context.Background(), "LHR")
		}
	}()
	code, stderr := statusCLI(t)
	g.Expect(code).To(Equal(localcmd.ExitFailure))
	g.Expect(stderr).To(ContainSubstring("LHR: partitioned"))

	t.Log("the Workload marks LHR stale, keeping its last known counts")
	g.Eventually(func(g Gomega) {
		cur := &computev1alpha.Workload{}
		g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		lhr := cityOf(cur, "edge", "LHR")
		g.Expect(lhr).NotTo(BeNil())
		g.Expect(lhr.Stale).To(BeTrue())
		g.Expect(lhr.Reason).To(Equal(computev1alpha.ReasonCellUnreachable))
		g.Expect(lhr.LastSeenTime).NotTo(BeNil())
		g.Expect(lhr.Available).To(BeFalse())
		g.Expect(lhr.ReadyReplicas).To(Equal(int32(1)))
		avail := meta.FindStatusCondition(cur.Status.Conditions, computev1alpha.ConditionAvailable)
		g.Expect(avail).NotTo(BeNil())
		g.Expect(avail.Message).To(ContainSubstring("edge/LHR (CellUnreachable)"))
	}).WithTimeout(chainWait).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("the Workload marked LHR stale %s after the partition began", time.Since(cut).Round(100*time.Millisecond))
	user := newCLIUser(t, ns.name)
	out := user.run(0, "status", w.Name, "--yes").Stdout
	expectContains(t, "status", statusRow(out, "LHR"), "unreachable (last seen")
	t.Logf("`datumctl-compute status` showed LHR unreachable %s after the partition began", time.Since(cut).Round(100*time.Millisecond))

	t.Log("a Workload running only in LHR is deleted: it is gone from the project at once")
	g.Expect(project.Delete(ctx, doomed)).To(Succeed())
	deleted := time.Now()
	g.Eventually(func(g Gomega) {
		err := project.Get(ctx, client.ObjectKeyFromObject(doomed), &computev1alpha.Workload{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Workload still there: %v", err)
		g.Expect(deploymentsOf(g, doomed)).To(BeEmpty())
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	t.Logf("the deleted Workload left the project %s after the delete", time.Since(deleted).Round(100*time.Millisecond))

	t.Log("DFW and SIN scale to 2 and roll to a new image meanwhile")
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Placements[0].ScaleSettings.MinReplicas = 2
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = "ghcr.io/citycells/hello:2.0"
	})
	for _, city := range []string{"DFW", "SIN"} {
		g.Eventually(func(g Gomega) {
			insts := cellInstances(g, ns, w, city)
			g.Expect(insts).To(HaveLen(2))
			for i := range insts {
				g.Expect(ready(&insts[i])).To(BeTrue())
				g.Expect(insts[i].Spec.Runtime.Sandbox.Containers[0].Image).To(Equal("ghcr.io/citycells/hello:2.0"))
			}
		}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	}
	t.Logf("DFW and SIN reached 2 ready at the new image %s into the partition", time.Since(cut).Round(100*time.Millisecond))

	t.Log("nothing of LHR is deleted or recreated in any plane while it is cut off")
	if rest := partition - time.Since(cut); rest > 0 {
		time.Sleep(rest)
	}
	g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(uids(lhrBefore)), "cell")
	g.Expect(uids(writeBacksOf(g, ns, w, "LHR"))).To(Equal(uids(hubBefore)), "hub write-backs")
	g.Expect(uids(projectionsOf(g, ns, w, "LHR"))).To(Equal(uids(projBefore)), "projections")
	g.Expect(instancesIn(g, cells["LHR"], ns.hub, doomedWDs[0].Name)).To(HaveLen(1), "the deleted Workload's Instance waits for LHR to return")

	t.Log("healed: LHR converges to the latest spec and the deleted Workload leaves its cell")
	g.Expect(local.Heal(ctx, "LHR")).To(Succeed())
	healed = true
	healedAt := time.Now()
	expectAvailable(t, w, counts{deployments: 3, replicas: 6, ready: 6, desired: 6, updated: 6})
	t.Logf("converged %s after the heal", time.Since(healedAt).Round(100*time.Millisecond))
	g.Eventually(func(g Gomega) {
		g.Expect(instancesIn(g, cells["LHR"], ns.hub, doomedWDs[0].Name)).To(BeEmpty())
		err := cells["LHR"].Get(ctx, client.ObjectKey{Namespace: ns.hub, Name: doomedWDs[0].Name}, &computev1alpha.WorkloadDeployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "cell WorkloadDeployment still there: %v", err)
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	t.Logf("the deleted Workload's objects left LHR's cell %s after the heal", time.Since(healedAt).Round(100*time.Millisecond))
	cur := &computev1alpha.Workload{}
	g.Expect(project.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
	g.Expect(cityOf(cur, "edge", "LHR").Stale).To(BeFalse())
	expectHealthy(t)
}

// writeBacksOf lists the hub write-backs of a Workload's city.
func writeBacksOf(g Gomega, ns projectNamespace, w *computev1alpha.Workload, city string) []computev1alpha.Instance {
	return cityInstancesIn(g, hub, ns.hub, w, city)
}

// cellInstances lists the Instances of a Workload's city in its cell.
func cellInstances(g Gomega, ns projectNamespace, w *computev1alpha.Workload, city string) []computev1alpha.Instance {
	return cityInstancesIn(g, cells[city], ns.hub, w, city)
}

// cityInstancesIn lists the Instances of a Workload's city in a plane's
// namespace.
func cityInstancesIn(g Gomega, c client.Client, namespace string, w *computev1alpha.Workload, city string) []computev1alpha.Instance {
	var out []computev1alpha.Instance
	for _, wd := range deploymentsOf(g, w) {
		if wd.Spec.CityCode == city {
			out = append(out, instancesIn(g, c, namespace, wd.Name)...)
		}
	}
	return out
}

// uids lists the uids of instances, sorted.
func uids(instances []computev1alpha.Instance) []string {
	out := make([]string, 0, len(instances))
	for _, i := range instances {
		out = append(out, string(i.UID))
	}
	slices.Sort(out)
	return out
}

func TestARestartedCityShowsFreshInstancesInTheProject(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "fresh").withPlacement("edge", 2, "DFW", "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 4, ready: 4, desired: 4, updated: 4})
	before := map[string][]computev1alpha.Instance{}
	for _, city := range []string{"DFW", "LHR"} {
		before[city] = projectionsOf(g, ns, w, city)
		g.Expect(before[city]).To(HaveLen(2))
	}

	t.Log("LHR restarts; DFW does not")
	restartedAt := time.Now().UTC().Add(time.Second).Truncate(time.Second)
	updateWorkload(t, w, func(w *computev1alpha.Workload) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[computev1alpha.CityRestartedAtAnnotationPrefix+"LHR"] = restartedAt.Format(time.RFC3339)
	})

	t.Log("the project shows new LHR Instances (new uid, fresh age, the cell Instance's uid) and DFW's untouched")
	g.Eventually(func(g Gomega) {
		lhr := projectionsOf(g, ns, w, "LHR")
		g.Expect(lhr).To(HaveLen(2))
		cell := cellInstances(g, ns, w, "LHR")
		g.Expect(cell).To(HaveLen(2))
		cellUIDs := uids(cell)
		for i := range lhr {
			g.Expect(uids(before["LHR"])).NotTo(ContainElement(string(lhr[i].UID)), "projection %s is new", lhr[i].Name)
			g.Expect(lhr[i].CreationTimestamp.Time).To(BeTemporally(">", before["LHR"][0].CreationTimestamp.Time))
			g.Expect(cellUIDs).To(ContainElement(lhr[i].Annotations[computev1alpha.SourceUIDAnnotation]))
			g.Expect(ready(&lhr[i])).To(BeTrue())
		}
		g.Expect(uids(projectionsOf(g, ns, w, "DFW"))).To(Equal(uids(before["DFW"])))
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
}

// projectionsOf lists the project's projections of a Workload's city.
func projectionsOf(g Gomega, ns projectNamespace, w *computev1alpha.Workload, city string) []computev1alpha.Instance {
	return cityInstancesIn(g, project, ns.name, w, city)
}
