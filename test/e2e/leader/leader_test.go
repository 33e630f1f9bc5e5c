//go:build e2e

package leader

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/fixture"
)

// Bounds for waiting: the simulated provider takes 2 s per Instance; a
// killed leader's Lease expires after its duration (15 s, controller-
// runtime's default) and the follower retries every 2 s.
const (
	rolloutWait  = 90 * time.Second
	takeoverWait = 60 * time.Second
	poll         = 100 * time.Millisecond
)

// The images of the rollout.
const (
	imageV1 = "ghcr.io/citycells/hello:1.0"
	imageV2 = "ghcr.io/citycells/hello:2.0"
)

// startedWorkersLog is what controller-runtime logs when a controller starts
// reconciling, which it does only on the leader.
const startedWorkersLog = "Starting workers"

// acquiredLeaseLog is what client-go logs when a replica becomes leader,
// compared in lower case.
const acquiredLeaseLog = "successfully acquired lease"

var projectPlane = platform.ProjectPlane(platform.DefaultProject)

func TestTheManagementLeaderDiesMidRolloutAndItsFollowerFinishesTheRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()

	t.Log("every role runs two ready replicas, and exactly one of each leads, holding the manifests' Lease")
	roles := expectOneLeaderEach(t)
	management := componentManagerOf(projectPlane)
	leader, follower := roles[management].leader, roles[management].follower
	t.Logf("the management role's leader is %s (pid %d), its follower %s (pid %d)", leader.Name, leader.PID, follower.Name, follower.PID)
	before := lease(g, projectPlane, platform.ManagementLease)

	ns, federation := fixture.ProjectNamespace(t, project, cities)
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ha"}}
	w.Spec.Template.Spec.Runtime = computev1alpha.InstanceRuntimeSpec{
		Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
		Sandbox:   &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: imageV1}}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{
		Name: "edge", CityCodes: cities, ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2},
	}}
	g.Expect(project.Create(ctx, w)).To(Succeed())
	expectAvailable(t, w, federation, imageV1)
	wds := deploymentUIDs(g, w, federation)

	t.Log("a new image starts rolling in both cities")
	update(t, w, func(w *computev1alpha.Workload) {
		w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image = imageV2
	})
	g.Eventually(func(g Gomega) bool {
		for _, city := range cities {
			if cellImage(g, city, federation, w) == imageV2 {
				return true
			}
		}
		return false
	}).WithTimeout(rolloutWait).WithPolling(50 * time.Millisecond).Should(BeTrue())

	t.Logf("the leader %s is killed (SIGKILL) mid-rollout", leader.Name)
	killed := time.Now()
	g.Expect(local.StopComponent(leader.Name, platform.StopOptions{Kill: true})).To(Succeed())

	t.Log("admission does not wait for the new leader: the follower's webhook server answers through the webhook front")
	update(t, w, func(w *computev1alpha.Workload) {
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		w.Labels["e2e.compute.datumapis.com/after-kill"] = "true"
	})

	t.Log("the follower takes the Lease over once it expires")
	var after *coordinationv1.Lease
	g.Eventually(func(g Gomega) {
		after = lease(g, projectPlane, platform.ManagementLease)
		g.Expect(ptr.Deref(after.Spec.HolderIdentity, "")).NotTo(BeElementOf("", ptr.Deref(before.Spec.HolderIdentity, "")))
	}).WithTimeout(takeoverWait).WithPolling(poll).Should(Succeed())
	takeover := time.Since(killed)
	duration := time.Duration(ptr.Deref(after.Spec.LeaseDurationSeconds, 0)) * time.Second
	t.Logf("takeover: %s after the kill (lease duration %s, transitions %d → %d)",
		takeover.Round(10*time.Millisecond), duration, ptr.Deref(before.Spec.LeaseTransitions, 0), ptr.Deref(after.Spec.LeaseTransitions, 0))
	g.Expect(ptr.Deref(after.Spec.LeaseTransitions, 0)).To(Equal(ptr.Deref(before.Spec.LeaseTransitions, 0) + 1))
	g.Eventually(func() string { return election(t, follower.Name) }).WithTimeout(10*time.Second).WithPolling(poll).
		Should(Equal(platform.RoleLeader), "compute-local status names the follower the leader")

	t.Log("the rollout completes: Available at the new template, every Instance replaced once")
	expectAvailable(t, w, federation, imageV2)

	t.Log("nothing was created twice: the same WorkloadDeployments in every plane, exactly the desired Instances, none churning")
	g.Expect(deploymentUIDs(g, w, federation)).To(Equal(wds))
	first := instanceUIDs(g, w, ns, federation)
	for city, byPlane := range first {
		for plane, uids := range byPlane {
			g.Expect(uids).To(HaveLen(2), "Instances of %s in the %s plane: %v", city, plane, uids)
		}
	}
	g.Consistently(func(g Gomega) {
		g.Expect(instanceUIDs(g, w, ns, federation)).To(Equal(first))
	}).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	t.Log("only leaders reconciled: the follower started no controller before it took the Lease, no other follower ever did")
	g.Expect(reconciledOnlyAsLeader(follower.Log)).To(Succeed())
	for name, r := range roles {
		if name == management {
			continue
		}
		started, err := logContains(r.follower.Log, startedWorkersLog)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(started).To(BeFalse(), "%s is a follower of %s and started controllers", r.follower.Name, name)
	}
}

// replicas are the two processes of one role.
type replicas struct {
	leader, follower platform.ComponentRecord
}

// componentManagerOf is the first replica's name of a plane's
// compute-manager.
func componentManagerOf(plane string) string { return "compute-manager-" + plane }

// expectOneLeaderEach waits until every replicated role (by the first
// replica's name) has two ready replicas of which exactly one leads, and
// its Lease names a holder; it returns them.
func expectOneLeaderEach(t *testing.T) map[string]replicas {
	t.Helper()
	out := map[string]replicas{}
	NewWithT(t).Eventually(func(g Gomega) {
		report, err := platform.Status(t.Context(), local.State().Dir)
		g.Expect(err).NotTo(HaveOccurred())
		byRole := map[string][]platform.ComponentStatus{}
		for _, c := range report.Components {
			if !strings.HasPrefix(c.Name, "compute-manager-") && !strings.HasPrefix(c.Name, "compute-quota-") {
				continue
			}
			role, _, _ := strings.Cut(c.Name, ".")
			byRole[role] = append(byRole[role], c)
		}
		// The management role, compute-quota, and a cell role per city.
		g.Expect(byRole).To(HaveLen(2+len(cities)), "replicated roles")
		for role, cs := range byRole {
			g.Expect(cs).To(HaveLen(2), "replicas of %s", role)
			var r replicas
			leaders := 0
			for _, c := range cs {
				g.Expect(c.Ready).To(BeTrue(), "%s: %s", c.Name, c.Detail)
				switch c.Election {
				case platform.RoleLeader:
					leaders++
					r.leader = c.ComponentRecord
				case platform.RoleFollower:
					r.follower = c.ComponentRecord
				}
			}
			g.Expect(leaders).To(Equal(1), "leaders of %s", role)
			out[role] = r
		}
		g.Expect(ptr.Deref(lease(g, projectPlane, platform.ManagementLease).Spec.HolderIdentity, "")).NotTo(BeEmpty())
		g.Expect(ptr.Deref(lease(g, projectPlane, platform.QuotaLease).Spec.HolderIdentity, "")).NotTo(BeEmpty())
		for _, city := range cities {
			g.Expect(ptr.Deref(lease(g, platform.CellPlane(city), platform.CellLease).Spec.HolderIdentity, "")).NotTo(BeEmpty())
		}
	}).WithTimeout(takeoverWait).WithPolling(500 * time.Millisecond).Should(Succeed())
	return out
}

// election is what compute-local status says of a component: leader or
// follower.
func election(t *testing.T, name string) string {
	report, err := platform.Status(t.Context(), local.State().Dir)
	if err != nil {
		return err.Error()
	}
	for _, c := range report.Components {
		if c.Name == name {
			return c.Election
		}
	}
	return "no component " + name
}

// lease reads a Lease of LeaseNamespace with the plane's admin client.
func lease(g Gomega, plane, name string) *coordinationv1.Lease {
	c := project
	if plane != projectPlane {
		c = cells[strings.ToUpper(strings.TrimPrefix(plane, "cell-"))]
	}
	l := &coordinationv1.Lease{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: platform.LeaseNamespace, Name: name}, l)).To(Succeed())
	return l
}

// expectAvailable waits until the Workload is Available for its latest
// generation with every replica updated and ready, and every Instance — in
// its cell, written back to the hub, projected into the project — runs
// image.
func expectAvailable(t *testing.T, w *computev1alpha.Workload, federation, image string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		got := &computev1alpha.Workload{}
		g.Expect(project.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		st := got.Status
		g.Expect(st.ObservedGeneration).To(Equal(got.Generation), "observedGeneration")
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue(), "Available: %+v", st.Conditions)
		g.Expect([]int32{st.Deployments, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas}).To(Equal([]int32{2, 4, 4, 4}))
		for _, wd := range deployments(g, project, got.Namespace, got.UID) {
			g.Expect(wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image).To(Equal(image))
			for _, c := range []client.Client{cells[wd.Spec.CityCode], hub} {
				insts := instances(g, c, federation, wd.Name)
				g.Expect(insts).To(HaveLen(2), "Instances of %s", wd.Spec.CityCode)
				for _, inst := range insts {
					g.Expect(inst.Status.Controller).NotTo(BeNil())
					g.Expect(inst.Status.Controller.ObservedTemplateHash).To(Equal(wd.Status.TemplateHash), "%s", inst.Name)
				}
			}
			projected := instances(g, project, got.Namespace, wd.Name)
			g.Expect(projected).To(HaveLen(2), "projected from %s", wd.Spec.CityCode)
			for _, inst := range projected {
				g.Expect(inst.Spec.Controller).NotTo(BeNil())
				g.Expect(inst.Spec.Controller.TemplateHash).To(Equal(wd.Status.TemplateHash), "%s", inst.Name)
			}
		}
	}).WithTimeout(rolloutWait).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// update applies change to the latest Workload, retrying conflicts.
func update(t *testing.T, w *computev1alpha.Workload, change func(*computev1alpha.Workload)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &computev1alpha.Workload{}
		if err := project.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		change(cur)
		return project.Update(context.Background(), cur)
	}).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// deployments lists a Workload's WorkloadDeployments in a namespace of c.
func deployments(g Gomega, c client.Client, namespace string, workload types.UID) []computev1alpha.WorkloadDeployment {
	list := &computev1alpha.WorkloadDeploymentList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.WorkloadUIDLabel: string(workload)})).To(Succeed())
	return list.Items
}

// cellImage is the image of the Workload's WorkloadDeployment in a city's
// cell; empty before it is there.
func cellImage(g Gomega, city, federation string, w *computev1alpha.Workload) string {
	for _, wd := range deployments(g, cells[city], federation, w.UID) {
		return wd.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image
	}
	return ""
}

// deploymentUIDs maps plane/name to the UID of every WorkloadDeployment of
// the Workload in the project, the hub and the cells.
func deploymentUIDs(g Gomega, w *computev1alpha.Workload, federation string) map[string]types.UID {
	out := map[string]types.UID{}
	add := func(plane string, wds []computev1alpha.WorkloadDeployment) {
		for _, wd := range wds {
			out[plane+"/"+wd.Name] = wd.UID
		}
	}
	add("project", deployments(g, project, w.Namespace, w.UID))
	add("hub", deployments(g, hub, federation, w.UID))
	for _, city := range cities {
		add("cell-"+city, deployments(g, cells[city], federation, w.UID))
	}
	g.Expect(out).To(HaveLen(2+2+len(cities)), "WorkloadDeployments: %v", out)
	return out
}

// instanceUIDs maps city → plane → the UIDs of the Instances of the
// Workload's deployment in that city, in the cell, the hub and the project.
func instanceUIDs(g Gomega, w *computev1alpha.Workload, namespace, federation string) map[string]map[string][]types.UID {
	out := map[string]map[string][]types.UID{}
	for _, wd := range deployments(g, project, namespace, w.UID) {
		city := wd.Spec.CityCode
		out[city] = map[string][]types.UID{}
		for plane, in := range map[string]struct {
			c  client.Client
			ns string
		}{"cell": {cells[city], federation}, "hub": {hub, federation}, "project": {project, namespace}} {
			uids := []types.UID{}
			for _, inst := range instances(g, in.c, in.ns, wd.Name) {
				uids = append(uids, inst.UID)
			}
			slices.Sort(uids)
			out[city][plane] = uids
		}
	}
	return out
}

// instances lists the Instances of a deployment in a namespace of c.
func instances(g Gomega, c client.Client, namespace, deployment string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.WorkloadDeploymentNameLabel: deployment})).To(Succeed())
	return list.Items
}

// reconciledOnlyAsLeader checks a replica's log: every controller it
// started, it started after it acquired the Lease.
func reconciledOnlyAsLeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	leader, started := false, 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(strings.ToLower(line), acquiredLeaseLog):
			leader = true
		case strings.Contains(line, startedWorkersLog):
			if !leader {
				return fmt.Errorf("%s started a controller before it led: %s", path, line)
			}
			started++
		}
	}
	if started == 0 {
		return errors.New(path + " never started a controller after it took the Lease")
	}
	return sc.Err()
}

// logContains reports whether a log has a line containing s.
func logContains(path, s string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return strings.Contains(string(data), s), nil
}

// noDenials fails the run when a compute-manager or compute-quota was
// refused anything — the leases and events of the election included: the
// overlays' RBAC must be exactly enough for replicated roles.
func noDenials(p *platform.Platform) error {
	var denied []string
	for _, c := range p.State().Components {
		if !strings.HasPrefix(c.Name, "compute-manager-") && !strings.HasPrefix(c.Name, "compute-quota-") {
			continue
		}
		data, err := os.ReadFile(c.Log)
		if err != nil {
			return fmt.Errorf("cannot read the log of %s: %w", c.Name, err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if strings.Contains(line, "is forbidden: User") {
				denied = append(denied, c.Name+": "+line)
			}
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("the overlays' RBAC refused replicated components %d times; first:\n%s", len(denied), strings.Join(denied[:min(5, len(denied))], "\n"))
	}
	return nil
}
