//go:build bench

package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/test/bench/internal/benchkit"
)

// planes are the clients of every plane the checks read.
type planes struct {
	project, hub client.Client
	cells        map[string]client.Client
	// hubNS is the federation namespace of the project namespace, in the
	// hub and in the cells.
	hubNS string
	// lastCounts is the last check that could read every plane.
	lastCounts checked
}

func newPlanes(b *testing.B, p *platform.Platform) *planes {
	pl := &planes{
		project: benchkit.Client(b, p, platform.ProjectPlane(platform.DefaultProject), requestTimeout),
		hub:     benchkit.Client(b, p, platform.HubPlane, requestTimeout),
		cells:   map[string]client.Client{},
	}
	for _, city := range cities {
		pl.cells[city] = benchkit.Client(b, p, platform.CellPlane(city), requestTimeout)
	}
	return pl
}

// checked is what one pass over every plane found.
type checked struct {
	lost, dup, orphan int
	// problems says what is off, each line naming the Workload it
	// concerns when one is known.
	problems []string
	// bySubject lists the problems of each Workload, by name.
	bySubject map[string][]string
	// subjects are the Workloads seen: live ones and the deleted ones
	// something is left of.
	subjects map[string]bool
	// live are the Workloads that exist and are not being deleted.
	live []string
}

// note records a problem of subject (a Workload name, or "" for none
// known), counting it in kind when kind is not nil.
func (c *checked) note(kind *int, subject, format string, args ...any) {
	if kind != nil {
		*kind++
	}
	line := fmt.Sprintf(format, args...)
	if subject != "" {
		line = "Workload " + subject + ": " + line
		c.bySubject[subject] = append(c.bySubject[subject], line)
		c.subjects[subject] = true
	}
	c.problems = append(c.problems, line)
}

// expectedWD is a WorkloadDeployment a live Workload should have, with
// what its Instances must be.
type expectedWD struct {
	workload, city, image, hash string
	replicas                    int
}

// check reads every plane once and compares it with the Workloads of the
// project: every live Workload converged to its spec, nothing left of the
// deleted ones.
func (pl *planes) check(ctx context.Context) (checked, error) {
	c := checked{bySubject: map[string][]string{}, subjects: map[string]bool{}}
	ws := &computev1alpha.WorkloadList{}
	projWDs := &computev1alpha.WorkloadDeploymentList{}
	projInsts := &computev1alpha.InstanceList{}
	hubWDs := &computev1alpha.WorkloadDeploymentList{}
	hubInsts := &computev1alpha.InstanceList{}
	claims := &quotav1alpha1.ResourceClaimList{}
	reads := []struct {
		c    client.Client
		ns   string
		list client.ObjectList
	}{
		{pl.project, namespace, ws}, {pl.project, namespace, projWDs}, {pl.project, namespace, projInsts},
		{pl.hub, pl.hubNS, hubWDs}, {pl.hub, pl.hubNS, hubInsts}, {pl.project, namespace, claims},
	}
	cellWDs := map[string]*computev1alpha.WorkloadDeploymentList{}
	cellInsts := map[string]*computev1alpha.InstanceList{}
	for _, city := range cities {
		cellWDs[city], cellInsts[city] = &computev1alpha.WorkloadDeploymentList{}, &computev1alpha.InstanceList{}
		reads = append(reads, struct {
			c    client.Client
			ns   string
			list client.ObjectList
		}{pl.cells[city], pl.hubNS, cellWDs[city]}, struct {
			c    client.Client
			ns   string
			list client.ObjectList
		}{pl.cells[city], pl.hubNS, cellInsts[city]})
	}
	for _, r := range reads {
		if err := r.c.List(ctx, r.list, client.InNamespace(r.ns)); err != nil {
			return c, err
		}
	}

	// The Workloads: each live one Available at its generation with every
	// count at the desired.
	byUID := map[string]*computev1alpha.Workload{}
	for i := range ws.Items {
		w := &ws.Items[i]
		if w.DeletionTimestamp != nil {
			c.note(&c.orphan, w.Name, "still being deleted (finalizers %v)", w.Finalizers)
			continue
		}
		c.live = append(c.live, w.Name)
		c.subjects[w.Name] = true
		byUID[string(w.UID)] = w
		want := int32(len(cities)) * w.Spec.Placements[0].ScaleSettings.MinReplicas
		st := w.Status
		if st.ObservedGeneration != w.Generation || !meta.IsStatusConditionTrue(st.Conditions, computev1alpha.ConditionAvailable) ||
			st.Replicas != want || st.ReadyReplicas != want || st.UpdatedReplicas != want || st.DesiredReplicas != want {
			c.note(nil, w.Name, "generation %d observed %d, Available %s, counts %+v, want %d", w.Generation, st.ObservedGeneration,
				conditionStatus(st.Conditions, computev1alpha.ConditionAvailable), st.ReplicaCounts, want)
		}
	}

	// The project's WorkloadDeployments: one per city of each live
	// Workload; any other is an orphan.
	expected := map[string]expectedWD{}
	citiesOf := map[string][]string{}
	for _, wd := range projWDs.Items {
		w := byUID[wd.Labels[computev1alpha.WorkloadUIDLabel]]
		if w == nil || wd.DeletionTimestamp != nil {
			c.note(&c.orphan, wd.Labels[computev1alpha.WorkloadNameLabel], "project: WorkloadDeployment %s left", wd.Name)
			continue
		}
		citiesOf[w.Name] = append(citiesOf[w.Name], wd.Spec.CityCode)
		expected[wd.Name] = expectedWD{workload: w.Name, city: wd.Spec.CityCode, image: w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image,
			hash: wd.Status.TemplateHash, replicas: int(w.Spec.Placements[0].ScaleSettings.MinReplicas)}
		if wd.Status.ObservedGeneration != wd.Generation {
			c.note(nil, w.Name, "project: WorkloadDeployment %s generation %d observed %d", wd.Name, wd.Generation, wd.Status.ObservedGeneration)
		}
	}
	for _, name := range c.live {
		got := citiesOf[name]
		for _, city := range cities {
			switch n := count(got, city); {
			case n == 0:
				c.note(&c.lost, name, "project: no WorkloadDeployment in %s", city)
			case n > 1:
				c.note(&c.dup, name, "project: %d WorkloadDeployments in %s", n, city)
			}
		}
	}

	// The copies in the hub and the cells.
	compareWDs(&c, "hub", hubWDs.Items, expected, "")
	for _, city := range cities {
		compareWDs(&c, "cell "+city, cellWDs[city].Items, expected, city)
	}

	// The Instances: in each cell those of its city, their write-backs in
	// the hub, their projections in the project.
	compareInstances(&c, "project", projInsts.Items, expected, "", true)
	compareInstances(&c, "hub", hubInsts.Items, expected, "", false)
	want := map[string]bool{}
	for _, city := range cities {
		compareInstances(&c, "cell "+city, cellInsts[city].Items, expected, city, false)
		for _, in := range cellInsts[city].Items {
			if _, ok := expected[in.Labels[computev1alpha.WorkloadDeploymentNameLabel]]; ok {
				want[names.ResourceClaimName(in.Name)] = true
			}
		}
	}

	// The quota claims: one per Instance of the cells, none left over.
	for _, cl := range claims.Items {
		if !want[cl.Name] {
			c.note(&c.orphan, "", "project: ResourceClaim %s has no Instance of a live Workload", cl.Name)
		}
		delete(want, cl.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		c.note(&c.lost, "", "project: no ResourceClaim %s", name)
	}
	pl.lastCounts = c
	return c, nil
}

// compareWDs compares a plane's WorkloadDeployments with the expected ones
// (of city only, when city is set).
func compareWDs(c *checked, plane string, got []computev1alpha.WorkloadDeployment, expected map[string]expectedWD, city string) {
	seen := map[string]bool{}
	for _, wd := range got {
		e, ok := expected[wd.Name]
		if !ok || (city != "" && e.city != city) {
			c.note(&c.orphan, wd.Labels[computev1alpha.WorkloadNameLabel], "%s: WorkloadDeployment %s left", plane, wd.Name)
			continue
		}
		seen[wd.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(expected)) {
		if e := expected[name]; !seen[name] && (city == "" || e.city == city) {
			c.note(&c.lost, e.workload, "%s: no WorkloadDeployment %s", plane, name)
		}
	}
}

// compareInstances compares a plane's Instances with the slots of the
// expected WorkloadDeployments (of city only, when city is set): each slot
// filled once, at the deployment's template; with ready, each Ready at the
// Workload's image too.
func compareInstances(c *checked, plane string, got []computev1alpha.Instance, expected map[string]expectedWD, city string, ready bool) {
	slots := map[string]map[string]int{}
	for i := range got {
		in := &got[i]
		wdName := in.Labels[computev1alpha.WorkloadDeploymentNameLabel]
		e, ok := expected[wdName]
		if !ok || (city != "" && e.city != city) {
			c.note(&c.orphan, in.Labels[computev1alpha.WorkloadNameLabel], "%s: Instance %s left", plane, in.Name)
			continue
		}
		if slots[wdName] == nil {
			slots[wdName] = map[string]int{}
		}
		slots[wdName][in.Labels[computev1alpha.InstanceIndexLabel]]++
		if in.Spec.Controller == nil || in.Spec.Controller.TemplateHash != e.hash {
			c.note(&c.orphan, e.workload, "%s: Instance %s is not at the current template", plane, in.Name)
		}
		if ready && (in.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(in.Status.Conditions, computev1alpha.ConditionReady) ||
			in.Spec.Runtime.Sandbox == nil || in.Spec.Runtime.Sandbox.Containers[0].Image != e.image) {
			c.note(nil, e.workload, "%s: Instance %s not Ready at %s", plane, in.Name, e.image)
		}
	}
	for _, wdName := range slices.Sorted(maps.Keys(expected)) {
		e := expected[wdName]
		if city != "" && e.city != city {
			continue
		}
		seen := slots[wdName]
		for i := range e.replicas {
			switch n := seen[strconv.Itoa(i)]; {
			case n == 0:
				c.note(&c.lost, e.workload, "%s: no Instance %d of %s", plane, i, wdName)
			case n > 1:
				c.note(&c.dup, e.workload, "%s: %d Instances %d of %s", plane, n, i, wdName)
			}
			delete(seen, strconv.Itoa(i))
		}
		for _, idx := range slices.Sorted(maps.Keys(seen)) {
			c.note(&c.orphan, e.workload, "%s: %d Instance(s) with index %q of %s beyond %d", plane, seen[idx], idx, wdName, e.replicas)
		}
	}
}

// conditionStatus is a condition's status and reason, or "unset".
func conditionStatus(conds []metav1.Condition, t string) string {
	cond := meta.FindStatusCondition(conds, t)
	if cond == nil {
		return "unset"
	}
	return fmt.Sprintf("%s(%s)", cond.Status, cond.Reason)
}

// count counts v in s.
func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
