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

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local"
)

// statusCLI runs `compute-local status` against the platform, as a user
// would, and returns its exit code and stderr.
func statusCLI(t *testing.T) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := local.Main([]string{"status", "--state-dir", platform.State().Dir}, local.Streams{Out: &out, Err: &errOut})
	return code, errOut.String()
}

// problemNames lists the names in a status report's problems.
func problemNames(r *local.StatusReport) []string {
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
		r, err := local.Status(t.Context(), platform.State().Dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Problems).To(BeEmpty())
		code, stderr := statusCLI(t)
		g.Expect(code).To(Equal(local.ExitOK), stderr)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

func TestStatusNamesAStoppedOrFrozenComputeManagerOrQuotaService(t *testing.T) {
	expectHealthy(t)
	for _, name := range []string{
		"compute-quota-" + local.ProjectPlane(local.DefaultProject),
		"compute-manager-" + local.CellPlane("LHR"),
		"compute-manager-" + local.ProjectPlane(local.DefaultProject),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()

			t.Log("killed like a crash: status exits 1 and names it as stopped")
			g.Expect(platform.StopComponent(name, local.StopOptions{Kill: true})).To(Succeed())
			code, stderr := statusCLI(t)
			g.Expect(code).To(Equal(local.ExitFailure))
			g.Expect(stderr).To(ContainSubstring(name + ": stopped"))

			t.Log("started again: status is healthy once it is ready")
			g.Expect(platform.StartComponent(ctx, name)).To(Succeed())
			expectHealthy(t)

			t.Log("frozen (SIGSTOP): alive, but its readiness endpoint does not answer, so status names it not ready")
			pid := componentPID(t, name)
			g.Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed())
			defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
			r, err := local.Status(ctx, platform.State().Dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.OK).To(BeFalse())
			g.Expect(problemNames(r)).To(ContainElement(name + ": " + local.ProblemNotReady))
			code, stderr = statusCLI(t)
			g.Expect(code).To(Equal(local.ExitFailure))
			g.Expect(stderr).To(ContainSubstring(name + ": not ready"))
			g.Expect(syscall.Kill(pid, syscall.SIGCONT)).To(Succeed())
			expectHealthy(t)
		})
	}
}

// componentPID returns the recorded pid of a component.
func componentPID(t *testing.T, name string) int {
	t.Helper()
	for _, c := range platform.State().Components {
		if c.Name == name {
			return c.PID
		}
	}
	t.Fatalf("no component %s", name)
	return 0
}

func TestAPartitionedCityKeepsItsInstancesWhileTheOthersScale(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	expectHealthy(t)
	ns := newProjectNamespace(t)
	w := makeWorkload(ns.name, "islands").withPlacement("dallas", 1, "DFW").withPlacement("london", 1, "LHR").create(t)
	expectAvailable(t, w, counts{deployments: 2, replicas: 2, ready: 2, desired: 2, updated: 2})
	lhrBefore := cellInstances(g, ns, w, "LHR")
	g.Expect(lhrBefore).To(HaveLen(1))

	t.Log("LHR is cut off from the hub and the project; status says so")
	g.Expect(platform.Partition(ctx, "LHR", 0, local.PartitionHang)).To(Succeed())
	healed := false
	defer func() {
		if !healed {
			_ = platform.Heal(context.Background(), "LHR")
		}
	}()
	r, err := local.Status(ctx, platform.State().Dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problemNames(r)).To(ContainElement("LHR: " + local.ProblemPartitioned))
	code, stderr := statusCLI(t)
	g.Expect(code).To(Equal(local.ExitFailure))
	g.Expect(stderr).To(ContainSubstring("LHR: partitioned"))

	t.Log("DFW scales to 3 meanwhile; LHR's cell keeps its Instance, untouched")
	updateWorkload(t, w, func(w *computev1alpha.Workload) { w.Spec.Placements[0].ScaleSettings.MinReplicas = 3 })
	g.Eventually(func(g Gomega) {
		dfw := cellInstances(g, ns, w, "DFW")
		g.Expect(dfw).To(HaveLen(3))
		for i := range dfw {
			g.Expect(ready(&dfw[i])).To(BeTrue())
		}
	}).WithTimeout(chainWait).WithPolling(poll).Should(Succeed())
	lhrDuring := cellInstances(g, ns, w, "LHR")
	g.Expect(uids(lhrDuring)).To(Equal(uids(lhrBefore)), "the partitioned cell's Instances are neither deleted nor recreated")

	t.Log("healed: the platform is healthy again and the Workload converges")
	g.Expect(platform.Heal(ctx, "LHR")).To(Succeed())
	healed = true
	expectAvailable(t, w, counts{deployments: 2, replicas: 4, ready: 4, desired: 4, updated: 4})
	g.Expect(uids(cellInstances(g, ns, w, "LHR"))).To(Equal(uids(lhrBefore)))
	expectHealthy(t)
}

// cellInstances lists the Instances of a Workload's city in its cell.
func cellInstances(g Gomega, ns projectNamespace, w *computev1alpha.Workload, city string) []computev1alpha.Instance {
	var out []computev1alpha.Instance
	for _, wd := range deploymentsOf(g, w) {
		if wd.Spec.CityCode == city {
			out = append(out, instancesIn(g, cells[city], ns.hub, wd.Name)...)
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
	var out []computev1alpha.Instance
	for _, wd := range deploymentsOf(g, w) {
		if wd.Spec.CityCode == city {
			out = append(out, instancesIn(g, project, ns.name, wd.Name)...)
		}
	}
	return out
}
