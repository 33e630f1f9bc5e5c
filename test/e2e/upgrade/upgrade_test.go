//go:build e2e

package upgrade

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/test/e2e/internal/fixture"
)

const (
	settle = 3 * time.Minute
	poll   = 500 * time.Millisecond
)

// TestAnUpgradeAndADowngradeRecreateNothing creates Workloads with the
// earlier release — placed by cityCodes and by Location, the old instance
// type spelling, waves, a mounted Secret, quota on — waits until they run,
// upgrades compute one role at a time, then downgrades it the same way
// (the earlier release's interpreter last: Platform.Downgrade),
// and checks after each that every WorkloadDeployment, hub copy, cell
// Instance, projection and companion keeps its uid in every plane, that no
// rollout started (revisions unchanged), and that every Workload stayed
// Available throughout (sampled every 200 ms).
func TestAnUpgradeAndADowngradeRecreateNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, fed := fixture.ProjectNamespace(t, project, cities)
	g.Expect(project.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		StringData: map[string]string{"password": "s3cret"}})).To(Succeed())

	web := workload(ns, "web")
	waved := workload(ns, "waved")
	waved.Spec.Placements[0].CityCodes = nil
	waved.Spec.Placements[0].Locations = []computev1alpha.PlacementLocation{{Name: "dfw"}, {Name: "lhr"}}
	waved.Spec.Rollout = &computev1alpha.WorkloadRollout{Strategy: computev1alpha.WavesCityRollout,
		Waves: []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}, {CityCodes: []string{"LHR"}}}}
	spec := &waved.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{{Name: "db", Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}}}
	spec.Runtime.Sandbox.Containers[0].VolumeAttachments = []computev1alpha.VolumeAttachment{{Name: "db", MountPath: ptr.To("/etc/db")}}
	for _, w := range []*computev1alpha.Workload{web, waved} {
		g.Expect(project.Create(ctx, w)).To(Succeed(), "the earlier release refused Workload %s", w.Name)
	}

	t.Log("the earlier release runs both Workloads: 2 cities × 2 instances each")
	g.Eventually(func(g Gomega) { expectRunning(g, ns) }).WithTimeout(settle).WithPolling(poll).Should(Succeed())
	before := snapshot(g, ns, fed)
	g.Expect(before).To(HaveLen(expectedObjects), "objects before the upgrade: %v", slices.Sorted(maps.Keys(before)))
	revisions := revisionsOf(g, ns)

	for _, step := range []struct {
		name, tree, binary string
		swap               func(ctx context.Context, repo, binary string) error
	}{{"upgrade", repo, newManager, local.Upgrade}, {"downgrade", oldTree, oldManager, local.Downgrade}} {
		watch := watchAvailable(ns)
		began := time.Now()
		g.Expect(step.swap(ctx, step.tree, step.binary)).To(Succeed(), step.name)
		t.Logf("%s: every role swapped in %s", step.name, time.Since(began).Round(time.Millisecond))

		g.Eventually(func(g Gomega) { expectRunning(g, ns) }).WithTimeout(settle).WithPolling(poll).Should(Succeed())
		g.Eventually(func(g Gomega) {
			for plane, c := range map[string]client.Client{"hub": hub, "DFW": cells["DFW"], "LHR": cells["LHR"]} {
				var wds computev1alpha.WorkloadDeploymentList
				g.Expect(c.List(ctx, &wds, client.InNamespace(fed))).To(Succeed())
				g.Expect(wds.Items).To(HaveLen(map[bool]int{true: 4, false: 2}[plane == "hub"]))
			}
		}).WithTimeout(settle).WithPolling(poll).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(diff(before, snapshot(g, ns, fed))).To(BeEmpty(), "objects recreated, added or lost by the %s", step.name)
		}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		g.Expect(revisionsOf(g, ns)).To(Equal(revisions), "the %s started a rollout", step.name)
		gaps := watch.stop()
		g.Expect(gaps).To(BeEmpty(), "a Workload was not Available during the %s", step.name)
		t.Logf("%s: %d objects kept their uids; both Workloads stayed Available (sampled every 200ms) and at their revision",
			step.name, len(before))
	}
}

// revisionsOf returns each Workload's current revision and template hash,
// and each of its deployments' revision annotation and template hash. A
// hash is read in the current spelling (names.TemplateHashes): the earlier
// release writes the 32-bit one, this one SHA-256, and either names the
// same template; a rollout changes a revision or names another template.
func revisionsOf(g Gomega, ns string) map[string]string {
	out := map[string]string{}
	var ws computev1alpha.WorkloadList
	g.Expect(project.List(context.Background(), &ws, client.InNamespace(ns))).To(Succeed())
	for _, w := range ws.Items {
		hash := names.HashesOf(&w.Spec.Template).Normalize(w.Status.CurrentTemplateHash)
		out["Workload/"+w.Name] = fmt.Sprintf("%d %s", w.Status.CurrentRevision, hash)
	}
	var wds computev1alpha.WorkloadDeploymentList
	g.Expect(project.List(context.Background(), &wds, client.InNamespace(ns))).To(Succeed())
	for _, wd := range wds.Items {
		h := names.HashesOf(&wd.Spec.Template)
		out["WorkloadDeployment/"+wd.Name] = h.Normalize(wd.Annotations[computev1alpha.RevisionHashAnnotation]) + " " + h.Current
	}
	return out
}

// availability samples, every 200 ms until stopped, whether each Workload
// of a namespace reports Available, and keeps the moments one did not.
type availability struct {
	mu   sync.Mutex
	gaps []string
	stop func() []string
}

func watchAvailable(ns string) *availability {
	a := &availability{}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			var ws computev1alpha.WorkloadList
			if err := project.List(context.Background(), &ws, client.InNamespace(ns)); err == nil {
				for _, w := range ws.Items {
					if c := meta.FindStatusCondition(w.Status.Conditions, computev1alpha.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
						a.mu.Lock()
						a.gaps = append(a.gaps, fmt.Sprintf("%s %s: %+v", time.Now().Format(time.TimeOnly), w.Name, c))
						a.mu.Unlock()
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	a.stop = func() []string {
		close(done)
		<-stopped
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.gaps
	}
	return a
}

// workload is a Workload as the earlier release took it: cityCodes and the
// old instance type spelling.
func workload(ns, name string) *computev1alpha.Workload {
	w := &computev1alpha.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: "ghcr.io/example/app:1.0"}},
	}
	w.Spec.Placements = []computev1alpha.WorkloadPlacement{{Name: "edge", CityCodes: []string{"DFW", "LHR"},
		ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 2}}}
	return w
}

// expectRunning expects both Workloads of ns Available with every instance
// ready at the generation they are at, with no cityCodes left (admission
// rewrites them into a locationSelector).
func expectRunning(g Gomega, ns string) {
	var list computev1alpha.WorkloadList
	g.Expect(project.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2))
	for _, w := range list.Items {
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation), "%s", w.Name)
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, computev1alpha.ConditionAvailable)).To(BeTrue(), "%s is not Available", w.Name)
		g.Expect(w.Status.ReadyReplicas).To(Equal(int32(4)), "%s", w.Name)
		g.Expect(w.Spec.Placements[0].CityCodes).To(BeEmpty(), "%s keeps cityCodes", w.Name)
	}
}

// expectedObjects are the objects snapshot finds: in the project, 2
// Workloads, 4 deployments and 8 projections; in the hub, 4 copies and the
// Secret's companion; in each of the 2 cells, 2 deployments, 4 Instances
// and the companion.
const expectedObjects = 2 + 4 + 8 + 4 + 1 + 2*(2+4+1)

// snapshot maps every object compute keeps for the Workloads of ns
// (federation namespace fed) in every plane to its uid.
func snapshot(g Gomega, ns, fed string) map[string]types.UID {
	out := map[string]types.UID{}
	add := func(plane, kind string, list client.ObjectList, c client.Client, namespace string) {
		g.Expect(c.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, item := range items {
			o := item.(client.Object)
			if kind == "Secret" && o.GetName() == "db" {
				continue // the user's own
			}
			out[fmt.Sprintf("%s/%s/%s", plane, kind, o.GetName())] = o.GetUID()
		}
	}
	add("project", "Workload", &computev1alpha.WorkloadList{}, project, ns)
	add("project", "WorkloadDeployment", &computev1alpha.WorkloadDeploymentList{}, project, ns)
	add("project", "Instance", &computev1alpha.InstanceList{}, project, ns)
	add("hub", "WorkloadDeployment", &computev1alpha.WorkloadDeploymentList{}, hub, fed)
	add("hub", "Secret", &corev1.SecretList{}, hub, fed)
	for _, city := range cities {
		add(city, "WorkloadDeployment", &computev1alpha.WorkloadDeploymentList{}, cells[city], fed)
		add(city, "Instance", &computev1alpha.InstanceList{}, cells[city], fed)
		add(city, "Secret", &corev1.SecretList{}, cells[city], fed)
	}
	return out
}

// diff lists the objects of before that are gone or have another uid in
// after, and those after has that before had not.
func diff(before, after map[string]types.UID) []string {
	var out []string
	for k, uid := range before {
		switch got, ok := after[k]; {
		case !ok:
			out = append(out, k+" is gone")
		case got != uid:
			out = append(out, fmt.Sprintf("%s was recreated (%s → %s)", k, uid, got))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k+" is new")
		}
	}
	slices.Sort(out)
	return out
}
