//go:build e2e

package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/clitest"
)

// TestTheCellsEventsReachTheProject: what the real node says about an
// Instance's container reaches the tenant's project as events of the
// Instance and, the Warning ones, of its Workload: a container killed for
// memory (OOMKilled) and an image that cannot be pulled (the kubelet's
// back-off); `events` and `instances describe` show them.
func TestTheCellsEventsReachTheProject(t *testing.T) {
	ns := newProjectNamespace(t)
	u := newCLIUser(t, ns.name)
	image := local.State().Registry + "/" + platform.DemoImage

	t.Log("--- a container that takes 256 MiB under a 32 MiB limit: OOMKilled")
	oom := clitest.NewWorkload("oom").Namespace(ns.name).Image(image).Placement("default", 1, city).
		Edit(func(w *computev1alpha.Workload) {
			c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
			c.Args = []string{"-eat", "256"}
			c.Resources = &computev1alpha.ContainerResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}
		}).Build()
	began := time.Now()
	g := NewWithT(t)
	g.Expect(project.Create(t.Context(), oom)).To(Succeed())
	inst := expectProjectEvent(t, ns.name, "oom", "OOMKilled", "ran out of memory")
	t.Logf("OOMKilled reached the project %.1f s after the Workload was created (load %s)", time.Since(began).Seconds(), loadAvg())
	out := u.run(cmdutil.ExitOK, "events", "oom", "--yes").Stdout
	g.Expect(out).To(ContainSubstring("OOMKilled"))
	g.Expect(out).To(ContainSubstring("instance/" + inst))
	g.Expect(u.run(cmdutil.ExitOK, "events", "oom", "--types", "Warning", "-o", "json", "--yes").Stdout).To(ContainSubstring(`"reason": "OOMKilled"`))
	g.Expect(u.run(cmdutil.ExitOK, "instances", "describe", inst, "--yes").Stdout).To(ContainSubstring("OOMKilled"))

	t.Log("--- an image the registry does not have: the kubelet's pull back-off")
	nopull := clitest.NewWorkload("nopull").Namespace(ns.name).Image(image+"-missing").Placement("default", 1, city).Build()
	began = time.Now()
	g.Expect(project.Create(t.Context(), nopull)).To(Succeed())
	// The kubelet's back-off itself is a Normal event; its Warning says
	// ImagePullBackOff.
	expectProjectEvent(t, ns.name, "nopull", "Failed", "ImagePullBackOff")
	t.Logf("the pull back-off reached the project %.1f s after the Workload was created (load %s)", time.Since(began).Seconds(), loadAvg())
	g.Expect(u.run(cmdutil.ExitOK, "events", "nopull", "--city", city, "--yes").Stdout).To(ContainSubstring("Back-off pulling image"))

	u.run(cmdutil.ExitOK, "destroy", "oom", "-y", "--wait", "--timeout", "3m")
	u.run(cmdutil.ExitOK, "destroy", "nopull", "-y", "--wait", "--timeout", "3m")
}

// expectProjectEvent waits for an event of reason, its message saying
// says, regarding an Instance of workload in the project namespace ns,
// and for its Workload's copy; it returns the Instance's name.
func expectProjectEvent(t *testing.T, ns, workload, reason, says string) string {
	t.Helper()
	var inst string
	NewWithT(t).Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(project.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var onInstance, onWorkload bool
		for _, ev := range list.Items {
			if ev.Reason != reason || !strings.Contains(ev.Message, says) {
				continue
			}
			switch ev.InvolvedObject.Kind {
			case computev1alpha.InstanceKind:
				g.Expect(ev.Labels).To(HaveKeyWithValue(computev1alpha.WorkloadNameLabel, workload))
				g.Expect(ev.Labels).To(HaveKeyWithValue(computev1alpha.CityCodeLabel, city))
				onInstance, inst = true, ev.InvolvedObject.Name
			case computev1alpha.WorkloadKind:
				onWorkload = ev.InvolvedObject.Name == workload
			}
		}
		g.Expect(onInstance).To(BeTrue(), "no %s event of an Instance of %s in the project", reason, workload)
		g.Expect(onWorkload).To(BeTrue(), "no %s event of Workload %s in the project", reason, workload)
	}).WithTimeout(wait).WithPolling(time.Second).Should(Succeed())
	return inst
}
