package placement

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// deploymentBuilder builds existing WorkloadDeployments for tests.
type deploymentBuilder struct {
	computev1alpha.WorkloadDeployment
}

// existingFor returns the deployment w wants in city as it would exist
// after being created.
func existingFor(w *computev1alpha.Workload, placement, city string) *deploymentBuilder {
	targets := expand(w, readyCities(city))
	for _, t := range targets {
		if t.Placement == placement && t.CityCode == city {
			return &deploymentBuilder{*t.Desired.DeepCopy()}
		}
	}
	panic("no such target")
}

func (d *deploymentBuilder) ownedBy(uid types.UID) *deploymentBuilder {
	d.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "compute.datumapis.com/v1alpha", Kind: "Workload", Name: "other", UID: uid, Controller: ptr.To(true),
	}}
	d.Labels[computev1alpha.WorkloadUIDLabel] = string(uid)
	d.Spec.WorkloadRef.UID = uid
	return d
}

func (d *deploymentBuilder) withoutOwner() *deploymentBuilder {
	d.OwnerReferences = nil
	return d
}

func (d *deploymentBuilder) withReplicas(n int32) *deploymentBuilder {
	d.Spec.Replicas = ptr.To(n)
	return d
}

func (d *deploymentBuilder) withLabel(k, v string) *deploymentBuilder {
	d.Labels[k] = v
	return d
}

func (d *deploymentBuilder) withAnnotation(k, v string) *deploymentBuilder {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[k] = v
	return d
}

func (d *deploymentBuilder) deleting() *deploymentBuilder {
	d.DeletionTimestamp = &metav1.Time{}
	d.Finalizers = []string{"x"}
	return d
}

func (d *deploymentBuilder) build() computev1alpha.WorkloadDeployment { return *d.DeepCopy() }

func namesOf(wds []*computev1alpha.WorkloadDeployment) []string {
	var out []string
	for _, wd := range wds {
		out = append(out, wd.Name)
	}
	slices.Sort(out)
	return out
}

func TestDiff(t *testing.T) {
	const uid = types.UID("u-1")
	w := makeWorkload("web", uid).withPlacement("edge", 1, "DFW", "LHR").build()
	changed := makeWorkload("web", uid).withPlacement("edge", 1, "DFW", "LHR").withImage("nginx:2").build()
	dfw := func() *deploymentBuilder { return existingFor(w, "edge", "DFW") }
	lhr := func() *deploymentBuilder { return existingFor(w, "edge", "LHR") }
	sin := func() *deploymentBuilder {
		return existingFor(makeWorkload("web", uid).withPlacement("edge", 1, "SIN").build(), "edge", "SIN")
	}

	type want struct {
		create, update, delete []string
		reasons                map[string]string
	}
	tests := map[string]struct {
		workload *computev1alpha.Workload
		bound    []string
		existing []computev1alpha.WorkloadDeployment
		want     want
	}{
		"nothing exists: every bound city is created": {
			workload: w, bound: []string{"DFW", "LHR"},
			want: want{create: []string{dfw().Name, lhr().Name}},
		},
		"everything is up to date: nothing to do": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build()},
			want:     want{},
		},
		"a template change updates every deployment": {
			workload: changed, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build()},
			want:     want{update: []string{dfw().Name, lhr().Name}},
		},
		"a city removed from the placement is deleted": {
			workload: w, bound: []string{"DFW", "LHR", "SIN"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build(), sin().build()},
			want:     want{delete: []string{sin().Name}},
		},
		"a city whose binding went away is deleted and reported": {
			workload: w, bound: []string{"DFW"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build()},
			want: want{delete: []string{lhr().Name}, reasons: map[string]string{
				lhr().Name: computev1alpha.ReasonLocationNotBound,
			}},
		},
		"a deployment of another workload holding a desired name is a conflict and untouched": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().ownedBy("u-other").build(), lhr().build()},
			want: want{reasons: map[string]string{
				dfw().Name: computev1alpha.ReasonDeploymentConflict,
			}},
		},
		"a deployment of another workload is never deleted": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build(), sin().ownedBy("u-other").build()},
			want:     want{},
		},
		"a deployment carrying our uid label but controlled by another workload is never deleted": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{
				dfw().build(), lhr().build(),
				sin().ownedBy("u-other").withLabel(computev1alpha.WorkloadUIDLabel, string(uid)).build(),
			},
			want: want{},
		},
		"an ownerless deployment of ours is adopted": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().withoutOwner().build(), lhr().build()},
			want:     want{update: []string{dfw().Name}},
		},
		"a deployment being deleted is waited for, not recreated": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().deleting().build(), lhr().build()},
			want: want{reasons: map[string]string{
				dfw().Name: computev1alpha.ReasonDeploymentPending,
			}},
		},
		"a deployment of ours already being deleted is not deleted again": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{dfw().build(), lhr().build(), sin().deleting().build()},
			want:     want{},
		},
		"replicas set through the scale subresource and foreign labels do not cause an update": {
			workload: w, bound: []string{"DFW", "LHR"},
			existing: []computev1alpha.WorkloadDeployment{
				dfw().withReplicas(5).withLabel("team", "a").withAnnotation(computev1alpha.FederationNamespaceAnnotation, "ns-1").build(),
				lhr().build(),
			},
			want: want{},
		},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			targets := Expand(tc.workload, Targets(tc.workload, readyCities(tc.bound...), tc.existing), nil)
			plan := Diff(tc.workload, targets, tc.existing)
			got := want{
				create: namesOf(plan.Create), update: namesOf(plan.Update), delete: namesOf(plan.Delete),
			}
			for _, pt := range plan.Targets {
				if pt.Reason != "" {
					if got.reasons == nil {
						got.reasons = map[string]string{}
					}
					got.reasons[pt.Name] = pt.Reason
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("Diff() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiffKeepsExistingDeploymentOfCityThatIsNotReady(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW").withImage("nginx:2").build()
	cities := cityList{readyCities()}.notReady("DFW").Cities
	old := existingFor(makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW").build(), "edge", "DFW").build()

	plan := Diff(w, expand(w, cities), []computev1alpha.WorkloadDeployment{old})
	if len(plan.Delete) != 0 || len(plan.Create) != 0 {
		t.Fatalf("plan creates %v and deletes %v, want neither", namesOf(plan.Create), namesOf(plan.Delete))
	}
	if diff := cmp.Diff([]string{old.Name}, namesOf(plan.Update)); diff != "" {
		t.Fatalf("updates mismatch (-want +got):\n%s", diff)
	}
	if got := plan.Targets[0].Reason; got != computev1alpha.ReasonLocationNotReady {
		t.Fatalf("reason = %q, want %q", got, computev1alpha.ReasonLocationNotReady)
	}

	// Without an existing deployment nothing is created.
	plan = Diff(w, expand(w, cities), nil)
	if len(plan.Create) != 0 {
		t.Fatalf("plan creates %v for a city that is not ready", namesOf(plan.Create))
	}
}

func TestMerge(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW").build()
	desired := expand(makeWorkload("web", "u-1").withPlacement("edge", 4, "DFW").withImage("nginx:2").build(), readyCities("DFW"))[0].Desired
	existing := existingFor(w, "edge", "DFW").withReplicas(7).withLabel("team", "a").
		withAnnotation(computev1alpha.FederationNamespaceAnnotation, "ns-1").build()
	before := existing.DeepCopy()

	merged, changed := Merge(&existing, desired)
	if !changed {
		t.Fatal("Merge() reports no change for a new template")
	}
	if diff := cmp.Diff(before, &existing); diff != "" {
		t.Fatalf("Merge() modified its input (-before +after):\n%s", diff)
	}
	checks := map[string]struct{ got, want any }{
		"the template is replaced":              {merged.Spec.Template.Spec.Runtime.Sandbox.Containers[0].Image, "nginx:2"},
		"scale settings are replaced":           {merged.Spec.ScaleSettings.MinReplicas, int32(4)},
		"replicas set by the scale subresource": {ptr.Deref(merged.Spec.Replicas, 0), int32(7)},
		"foreign labels are kept":               {merged.Labels["team"], "a"},
		"our labels are set":                    {merged.Labels[computev1alpha.WorkloadUIDLabel], "u-1"},
		"foreign annotations are kept":          {merged.Annotations[computev1alpha.FederationNamespaceAnnotation], "ns-1"},
		"the owner reference is not duplicated": {len(merged.OwnerReferences), 1},
	}
	for name, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", name, c.got, c.want)
		}
	}
}

func TestBelongsTo(t *testing.T) {
	w := makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW").build()
	tests := map[string]struct {
		wd   computev1alpha.WorkloadDeployment
		want bool
	}{
		"controlled by the workload":                   {wd: existingFor(w, "edge", "DFW").build(), want: true},
		"controlled by another workload":               {wd: existingFor(w, "edge", "DFW").ownedBy("u-2").build()},
		"no controller and the workload's uid in spec": {wd: existingFor(w, "edge", "DFW").withoutOwner().build(), want: true},
		"no controller and another uid in spec": {
			wd: existingFor(w, "edge", "DFW").ownedBy("u-2").withoutOwner().build(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := BelongsTo(&tc.wd, "u-1"); got != tc.want {
				t.Fatalf("BelongsTo() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNamesThatCollideWhenJoinedStayApart(t *testing.T) {
	// "app-a" with placement "b" and "app" with placement "a-b" join to the
	// same "app-a-b"; each Workload must still get its own deployment, and
	// neither may touch the other's.
	first := makeWorkload("app-a", "u-1").withPlacement("b", 1, "DFW").build()
	second := makeWorkload("app", "u-2").withPlacement("a-b", 1, "DFW").build()
	cities := readyCities("DFW")
	a := expand(first, cities)[0].Desired
	b := expand(second, cities)[0].Desired
	if a.Name == b.Name {
		t.Fatalf("both Workloads want WorkloadDeployment %s", a.Name)
	}
	existing := []computev1alpha.WorkloadDeployment{*a, *b}
	for _, w := range []*computev1alpha.Workload{first, second} {
		plan := Diff(w, expand(w, cities), existing)
		if len(plan.Create)+len(plan.Update)+len(plan.Delete) != 0 {
			t.Errorf("Workload %s plans writes with both deployments in place: create %v update %v delete %v",
				w.Name, namesOf(plan.Create), namesOf(plan.Update), namesOf(plan.Delete))
		}
	}
}

func TestMergeCarriesTheWorkloadsSuspension(t *testing.T) {
	running := makeWorkload("web", "u-1").withPlacement("edge", 1, "DFW").build()
	suspended := running.DeepCopy()
	suspended.Annotations = map[string]string{computev1alpha.SuspendedAnnotation: computev1alpha.SuspendedAnnotationValue}
	existing := existingFor(running, "edge", "DFW").withAnnotation(computev1alpha.FederationNamespaceAnnotation, "ns-1").build()

	merged, changed := Merge(&existing, expand(suspended, readyCities("DFW"))[0].Desired)
	if !changed || !computev1alpha.IsSuspended(merged.Annotations) {
		t.Fatalf("a suspended workload's deployment is not suspended: changed %v, annotations %v", changed, merged.Annotations)
	}

	resumed, changed := Merge(merged, expand(running, readyCities("DFW"))[0].Desired)
	if !changed {
		t.Fatal("Merge() reports no change when the suspension is lifted")
	}
	if _, ok := resumed.Annotations[computev1alpha.SuspendedAnnotation]; ok {
		t.Fatalf("the suspension annotation stays after resume: %v", resumed.Annotations)
	}
	if resumed.Annotations[computev1alpha.FederationNamespaceAnnotation] != "ns-1" {
		t.Fatalf("resume dropped a foreign annotation: %v", resumed.Annotations)
	}
	if _, again := Merge(resumed, expand(running, readyCities("DFW"))[0].Desired); again {
		t.Fatal("Merge() of a running workload's deployment is not idempotent")
	}
}
