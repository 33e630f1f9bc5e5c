//go:build e2e

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/e2e/internal/fixture"
)

// Bounds: pulling the demo image from the local registry and starting a
// container takes about a second; a node the cell stops hearing from is
// NotReady after the platform's 16 s grace period.
const (
	wait = 2 * time.Minute
	poll = 250 * time.Millisecond
)

// TestDemoRunsOnTheRealNode is the newcomer's path on a real node: deploy
// the demo image, curl every instance, restart, scale, roll out a broken
// image and back, lose the node's kubelet and containerd for a while, see
// a crashing command explained, destroy — and nothing is left running.
func TestDemoRunsOnTheRealNode(t *testing.T) {
	g := NewWithT(t)
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	image := local.State().Registry + "/" + platform.DemoImage

	u.run(cmdutil.ExitOK, "deploy", "hello", "--image", image, "--city", city, "--min", "2", "--port", "http:8080", "-y", "--timeout", "3m")
	pods := expectServing(t, ns, 2)

	{
		t.Log("--- restart replaces every Pod")
		u.run(cmdutil.ExitOK, "restart", "hello", "--city", city, "--wait", "--timeout", "3m")
		after := expectServing(t, ns, 2)
		for name, old := range pods {
			if now, ok := after[name]; ok && (now.UID == old.UID || containerID(now) == containerID(old)) {
				t.Errorf("Pod %s was not recreated by the restart: uid %s, container %s", name, now.UID, containerID(now))
			}
		}
	}

	{
		t.Log("--- scale adds a Pod")
		u.run(cmdutil.ExitOK, "scale", "hello", "--min", "3", "--wait", "--timeout", "3m")
		expectServing(t, ns, 3)
	}

	{
		t.Log("--- a missing image is explained and the old instances keep serving")
		u.run(cmdutil.ExitOK, "deploy", "hello", "--image", local.State().Registry+"/does-not-exist:1", "--detach", "-y")
		began := time.Now()
		g.Eventually(func(g Gomega) {
			// The table says it in words, -o json with the API's reason.
			g.Expect(u.runQuiet("status", "hello")).To(ContainSubstring("image unavailable"))
			g.Expect(u.runQuiet("status", "hello", "-o", "json")).To(ContainSubstring(computev1alpha.ReasonImageUnavailable))
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "status never said ImageUnavailable")
		t.Logf("status said %s %s after the deploy", computev1alpha.ReasonImageUnavailable, time.Since(began).Round(100*time.Millisecond))
		serving := 0
		for _, inst := range instances(g, cell, ns.hub) {
			if available(&inst) {
				g.Expect(get(t, "http://"+address(&inst)+":8080/")).To(ContainSubstring("in " + city))
				serving++
			}
		}
		g.Expect(serving).To(BeNumerically(">=", 2), "the instances of the working image stopped serving")
		u.run(cmdutil.ExitOK, "rollout", "undo", "hello", "--wait", "--timeout", "3m")
		pods = expectServing(t, ns, 3)
	}

	{
		t.Log("--- a node that goes quiet makes its instances unavailable, deletes nothing, and they recover")
		kubelet := "kubelet-" + strings.ToLower(city)
		g.Expect(local.StopComponent(kubelet, platform.StopOptions{Kill: true})).To(Succeed())
		stopped := time.Now()
		g.Eventually(func(g Gomega) {
			list := instances(g, cell, ns.hub)
			g.Expect(list).To(HaveLen(3))
			for _, inst := range list {
				c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "Instance %s still Available", inst.Name)
				g.Expect(c.Message).NotTo(BeEmpty())
			}
		}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
		t.Logf("instances unavailable %s after the kubelet stopped", time.Since(stopped).Round(100*time.Millisecond))
		time.Sleep(max(0, 60*time.Second-time.Since(stopped)))
		g.Expect(cellPods(g, ns.hub)).To(HaveLen(3), "Pods were deleted while the node was quiet")
		g.Expect(local.StartComponent(t.Context(), kubelet)).To(Succeed())
		after := expectServing(t, ns, 3)
		for name, old := range pods {
			if after[name].UID != old.UID {
				t.Errorf("Pod %s was replaced while its node was quiet (uid %s → %s)", name, old.UID, after[name].UID)
			}
		}
	}

	{
		t.Log("--- containerd killed and back: the containers keep running")
		containerd := "containerd-" + strings.ToLower(city)
		g.Expect(local.StopComponent(containerd, platform.StopOptions{Kill: true})).To(Succeed())
		for _, p := range pods {
			g.Expect(get(t, "http://"+p.Status.PodIP+":8080/")).To(ContainSubstring("in " + city))
		}
		g.Expect(local.StartComponent(t.Context(), containerd)).To(Succeed())
		after := expectServing(t, ns, 3)
		for name, old := range pods {
			if containerID(after[name]) != containerID(old) {
				t.Errorf("container of Pod %s restarted after containerd came back", name)
			}
		}
	}

	{
		t.Log("--- a crashing command is explained with its exit code")
		u.run(cmdutil.ExitOK, "deploy", "crash", "--image", image, "--city", city, "--min", "1", "--args", "-exit=3", "--detach", "-y")
		g.Eventually(func(g Gomega) {
			list := &computev1alpha.InstanceList{}
			g.Expect(cell.List(t.Context(), list, client.InNamespace(ns.hub))).To(Succeed())
			found := false
			for _, inst := range list.Items {
				if !strings.HasPrefix(inst.Name, "crash") {
					continue
				}
				c := meta.FindStatusCondition(inst.Status.Conditions, computev1alpha.ConditionAvailable)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(computev1alpha.ReasonInstanceCrashing))
				g.Expect(c.Message).To(ContainSubstring("exited with code 3"))
				found = true
			}
			g.Expect(found).To(BeTrue())
		}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
		u.run(cmdutil.ExitOK, "destroy", "crash", "--yes", "--wait")
	}

	{
		t.Log("--- destroy leaves no Pod and no container")
		u.run(cmdutil.ExitOK, "destroy", "hello", "--yes", "--wait")
		g.Eventually(func(g Gomega) {
			g.Expect(cellPods(g, ns.hub)).To(BeEmpty())
			g.Expect(runningContainers(g)).To(BeEmpty())
		}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	}
}

// expectServing waits until the workload has n Available Instances in the
// cell, each the Pod of the same name, Running and Ready, with the Pod's
// address in the cell, the hub and the project, answering HTTP with the
// demo's greeting from its city; it returns the Pods by name.
func expectServing(t *testing.T, ns projectNamespace, n int) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{}
	NewWithT(t).Eventually(func(g Gomega) {
		clear(out)
		list := instances(g, cell, ns.hub)
		g.Expect(list).To(HaveLen(n))
		for i := range list {
			inst := &list[i]
			g.Expect(available(inst)).To(BeTrue(), "Instance %s is not Available", inst.Name)
			pod := &corev1.Pod{}
			g.Expect(cell.Get(t.Context(), client.ObjectKey{Namespace: inst.Namespace, Name: inst.Name}, pod)).To(Succeed())
			g.Expect(metav1.IsControlledBy(pod, inst)).To(BeTrue(), "Pod %s is not controlled by its Instance", pod.Name)
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
			g.Expect(address(inst)).To(Equal(pod.Status.PodIP), "Instance %s's address", inst.Name)
			for plane, c := range map[string]client.Client{"hub": hub, "project": project} {
				namespace := ns.hub
				if plane == "project" {
					namespace = ns.name
				}
				copyOf := &computev1alpha.Instance{}
				g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: inst.Name}, copyOf)).To(Succeed())
				g.Expect(address(copyOf)).To(Equal(pod.Status.PodIP), "the %s's copy of Instance %s", plane, inst.Name)
			}
			out[pod.Name] = pod
		}
	}).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	for name, pod := range out {
		body := get(t, "http://"+pod.Status.PodIP+":8080/")
		if !strings.Contains(body, "hello from "+name+" in "+city) {
			t.Errorf("GET %s: %q, want the demo's greeting from %s in %s", pod.Status.PodIP, body, name, city)
		}
	}
	return out
}

// instances lists the Instances of a namespace of a plane, by name.
func instances(g Gomega, c client.Client, namespace string) []computev1alpha.Instance {
	list := &computev1alpha.InstanceList{}
	g.Expect(c.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	items := slices.DeleteFunc(list.Items, func(i computev1alpha.Instance) bool { return !strings.HasPrefix(i.Name, "hello") })
	slices.SortFunc(items, func(a, b computev1alpha.Instance) int { return strings.Compare(a.Name, b.Name) })
	return items
}

// cellPods lists the Pods of a cell namespace.
func cellPods(g Gomega, namespace string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(cell.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

// available reports an Instance's Available condition.
func available(inst *computev1alpha.Instance) bool {
	return meta.IsStatusConditionTrue(inst.Status.Conditions, computev1alpha.ConditionAvailable)
}

// address is the network address of an Instance's first interface.
func address(inst *computev1alpha.Instance) string {
	if len(inst.Status.NetworkInterfaces) == 0 || inst.Status.NetworkInterfaces[0].Assignments.NetworkIP == nil {
		return ""
	}
	return *inst.Status.NetworkInterfaces[0].Assignments.NetworkIP
}

// containerID is the runtime's id of a Pod's first container.
func containerID(p *corev1.Pod) string {
	if p == nil || len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	return p.Status.ContainerStatuses[0].ContainerID
}

// get returns the body of an HTTP GET from this machine.
func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// runningContainers lists the node's containers runc reports running.
func runningContainers(g Gomega) []string {
	nodes := local.State().Nodes
	g.Expect(nodes).To(HaveLen(1))
	out, err := exec.Command("runc", "--root", nodes[0].RuncRoot, "list", "--format", "json").Output()
	g.Expect(err).NotTo(HaveOccurred())
	var list []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if s := strings.TrimSpace(string(out)); s != "" && s != "null" {
		g.Expect(json.Unmarshal(out, &list)).To(Succeed())
	}
	var running []string
	for _, c := range list {
		if c.Status == "running" {
			running = append(running, c.ID)
		}
	}
	return running
}

// projectNamespace is a project namespace of a test, bound to the city.
type projectNamespace struct {
	// name is the project namespace; hub is the federation (and cell)
	// namespace compute maps it to.
	name, hub string
}

// newProjectNamespace creates a namespace of the platform's project bound
// to the city, deleted when the test ends.
func newProjectNamespace(t *testing.T) projectNamespace {
	t.Helper()
	name, hub := fixture.ProjectNamespace(t, project, []string{city})
	return projectNamespace{name: name, hub: hub}
}

// cliUser runs datumctl-compute against the project plane in a namespace.
type cliUser struct {
	t *testing.T
	h *clitest.Harness
}

// newCLIUser returns a user of the project plane in namespace ns.
func newCLIUser(t *testing.T, ns string) *cliUser {
	t.Helper()
	st := local.State()
	rec, err := st.Plane(platform.ProjectPlane(platform.DefaultProject))
	if err != nil {
		t.Fatalf("no project plane: %v", err)
	}
	return &cliUser{t: t, h: clitest.ForKubeconfig(t, rec.Kubeconfig, ns)}
}

// run runs a command, logs what it printed, and fails the test unless it
// exits with code.
func (u *cliUser) run(code int, args ...string) clitest.Result {
	u.t.Helper()
	res := u.exec(args...)
	u.t.Logf("$ datumctl-compute %s\n(exit %d)\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	if res.Code != code {
		u.t.Fatalf("`%s` exited %d, want %d", strings.Join(args, " "), res.Code, code)
	}
	return res
}

// runQuiet runs a command and returns its output, for polling.
func (u *cliUser) runQuiet(args ...string) string {
	res := u.exec(args...)
	return fmt.Sprintf("%s\n%s", res.Stdout, res.Stderr)
}

// exec runs a command.
func (u *cliUser) exec(args ...string) clitest.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	return u.h.Run(cli.Main, clitest.RunOptions{
		Ctx: ctx,
		Factory: func(f *cmdutil.Factory) {
			f.ActivationWait = time.Minute
			f.PollInterval = 200 * time.Millisecond
		},
	}, args...)
}
