package revision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// workloadBuilder builds Workloads for tests.
type workloadBuilder struct{ computev1alpha.Workload }

func makeWorkload(image string) *workloadBuilder {
	w := &workloadBuilder{}
	w.Name, w.Namespace, w.UID = "web", "default", types.UID("u-1")
	w.Spec.Template.Spec.Runtime.Resources.InstanceType = "datumcloud/d1-standard-2"
	w.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{
		Containers: []computev1alpha.SandboxContainer{{Name: "app", Image: image}},
	}
	return w
}

func (w *workloadBuilder) withLimit(n int32) *workloadBuilder {
	w.Spec.RevisionHistoryLimit = ptr.To(n)
	return w
}

func (w *workloadBuilder) restartedAt(v string) *workloadBuilder {
	w.Spec.Template.Metadata.Annotations = map[string]string{computev1alpha.RestartedAtAnnotation: v}
	return w
}

func (w *workloadBuilder) withAnnotation(k, v string) *workloadBuilder {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

func (w *workloadBuilder) build() *computev1alpha.Workload { return w.DeepCopy() }

// history applies the plans of recording each image in turn and returns the
// resulting revisions.
func history(t *testing.T, limit int32, images ...string) []appsv1.ControllerRevision {
	t.Helper()
	var revs []appsv1.ControllerRevision
	for _, img := range images {
		revs = apply(t, makeWorkload(img).withLimit(limit).build(), revs)
	}
	return revs
}

// apply applies the plan for w to revs as the API server would.
func apply(t *testing.T, w *computev1alpha.Workload, revs []appsv1.ControllerRevision) []appsv1.ControllerRevision {
	t.Helper()
	plan, err := Compute(w, revs, now)
	if err != nil {
		t.Fatalf("Compute() error = %v", err)
	}
	var out []appsv1.ControllerRevision
	deleted := map[string]bool{}
	for _, d := range plan.Delete {
		deleted[d.Name] = true
	}
	for _, r := range revs {
		switch {
		case deleted[r.Name]:
		case plan.Renumber != nil && plan.Renumber.Name == r.Name:
			out = append(out, *plan.Renumber)
		default:
			out = append(out, r)
		}
	}
	if plan.Create != nil {
		out = append(out, *plan.Create)
	}
	return out
}

type revSummary struct {
	Number int64
	Image  string
}

func summarize(t *testing.T, revs []appsv1.ControllerRevision) []revSummary {
	t.Helper()
	ptrs := make([]*appsv1.ControllerRevision, 0, len(revs))
	for i := range revs {
		ptrs = append(ptrs, &revs[i])
	}
	Sort(ptrs)
	var out []revSummary
	for _, r := range ptrs {
		tpl, err := Template(r)
		if err != nil {
			t.Fatalf("Template(%s) error = %v", r.Name, err)
		}
		out = append(out, revSummary{r.Revision, tpl.Spec.Runtime.Sandbox.Containers[0].Image})
	}
	return out
}

func TestHistory(t *testing.T) {
	tests := map[string]struct {
		limit  int32
		images []string
		want   []revSummary
	}{
		"the first template is revision 1": {
			limit: 10, images: []string{"a"},
			want: []revSummary{{1, "a"}},
		},
		"every change is a new revision": {
			limit: 10, images: []string{"a", "b", "c"},
			want: []revSummary{{1, "a"}, {2, "b"}, {3, "c"}},
		},
		"an unchanged template records nothing": {
			limit: 10, images: []string{"a", "a", "b", "b"},
			want: []revSummary{{1, "a"}, {2, "b"}},
		},
		"returning to an earlier template renumbers it instead of duplicating it": {
			limit: 10, images: []string{"a", "b", "a"},
			want: []revSummary{{2, "b"}, {3, "a"}},
		},
		"old revisions beyond the limit are trimmed, oldest first": {
			limit: 2, images: []string{"a", "b", "c", "d", "e"},
			want: []revSummary{{3, "c"}, {4, "d"}, {5, "e"}},
		},
		"a limit of zero keeps only the current revision": {
			limit: 0, images: []string{"a", "b", "c"},
			want: []revSummary{{3, "c"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := summarize(t, history(t, tc.limit, tc.images...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("history mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRestartIsARevision(t *testing.T) {
	revs := apply(t, makeWorkload("a").build(), nil)
	revs = apply(t, makeWorkload("a").restartedAt("2026-05-01T12:00:00Z").build(), revs)
	revs = apply(t, makeWorkload("a").restartedAt("2026-05-01T13:00:00Z").build(), revs)
	if len(revs) != 3 {
		t.Fatalf("got %d revisions after two restarts, want 3", len(revs))
	}
}

func TestComputeReportsCurrent(t *testing.T) {
	w := makeWorkload("a").build()
	revs := apply(t, w, nil)
	plan, err := Compute(w, revs, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Current{Name: "web-" + names.TemplateHash(&w.Spec.Template), Number: 1, TemplateHash: names.TemplateHash(&w.Spec.Template)}
	if diff := cmp.Diff(want, plan.Current); diff != "" {
		t.Fatalf("Current mismatch (-want +got):\n%s", diff)
	}
	if plan.Create != nil || plan.Renumber != nil || len(plan.Delete) != 0 {
		t.Fatalf("an unchanged template plans writes: %+v", plan)
	}
}

func TestARevisionRecordedBeforeTheInterfaceDefaultsStaysCurrent(t *testing.T) {
	stored := makeWorkload("a").build()
	stored.Spec.Template.Spec.NetworkInterfaces = []computev1alpha.InstanceNetworkInterface{{Network: computev1alpha.NetworkReference{Name: "default"}}}
	revs := apply(t, stored, nil)
	// The same Workload as the API server returns it once the CRD has the
	// interface fields: their defaults written.
	readBack := stored.DeepCopy()
	nic := &readBack.Spec.Template.Spec.NetworkInterfaces[0]
	nic.Name, nic.IPFamilies, nic.ReclaimPolicy = "eth0", []computev1alpha.IPFamily{computev1alpha.IPv6}, computev1alpha.ReclaimDelete
	plan, err := Compute(readBack, revs, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Create != nil || plan.Renumber != nil || plan.Current.Number != 1 {
		t.Fatalf("the read-back template planned a new revision: current %+v, create %v, renumber %v", plan.Current, plan.Create != nil, plan.Renumber != nil)
	}
}

// TestARevisionRecordedBeforeSHA256StaysCurrent: a history a release
// before SHA-256 recorded (labels in the 32-bit spelling) plans no new
// revision and renumbers none, and its hashes, in either spelling, map to
// the current one.
func TestARevisionRecordedBeforeSHA256StaysCurrent(t *testing.T) {
	revs := history(t, 10, "app:1", "app:2")
	for i := range revs {
		tpl, err := Template(&revs[i])
		if err != nil {
			t.Fatal(err)
		}
		revs[i].Labels[TemplateHashLabel] = names.HashesOf(tpl).Legacy()
	}
	for _, img := range []string{"app:2", "app:1"} {
		w := makeWorkload(img).build()
		h := names.HashesOf(&w.Spec.Template)
		if got := Spellings(revs); got[h.Legacy()] != h.Current || got[h.Current] != h.Current {
			t.Fatalf("Spellings(%s) = %v, want %s and %s to map to %s", img, got, h.Legacy(), h.Current, h.Current)
		}
		if tpl, ok := TemplateOf(revs, h.Legacy()); !ok || tpl.Spec.Runtime.Sandbox.Containers[0].Image != img {
			t.Fatalf("TemplateOf(the old spelling of %s) = %v, %t", img, tpl, ok)
		}
	}
	plan, err := Compute(makeWorkload("app:2").build(), revs, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Create != nil || plan.Renumber != nil || plan.Current.Number != 2 {
		t.Fatalf("an old-spelling history planned writes: current %+v, create %v, renumber %v", plan.Current, plan.Create != nil, plan.Renumber != nil)
	}
	if want := names.TemplateHash(&makeWorkload("app:2").build().Spec.Template); plan.Current.TemplateHash != want {
		t.Fatalf("Current.TemplateHash = %q, want the current spelling %q", plan.Current.TemplateHash, want)
	}
}

func TestNewRevisionRecordsWhoAndWhy(t *testing.T) {
	w := makeWorkload("a").
		withAnnotation(ChangeCauseAnnotation, "deploy a").
		withAnnotation(ChangedByAnnotation, "alice").build()
	plan, err := Compute(w, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Create
	want := map[string]string{
		ChangeCauseAnnotation: "deploy a",
		ChangedByAnnotation:   "alice",
		RecordedAtAnnotation:  "2026-05-01T12:00:00Z",
	}
	if diff := cmp.Diff(want, r.Annotations); diff != "" {
		t.Errorf("annotations mismatch (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		computev1alpha.WorkloadUIDLabel:  "u-1",
		computev1alpha.WorkloadNameLabel: "web",
		TemplateHashLabel:                names.TemplateHash(&w.Spec.Template),
	}
	if diff := cmp.Diff(wantLabels, r.Labels); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "u-1" || !ptr.Deref(r.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references = %+v, want the Workload as controller", r.OwnerReferences)
	}
	tpl, err := Template(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&w.Spec.Template, tpl); diff != "" {
		t.Errorf("recorded template mismatch (-want +got):\n%s", diff)
	}
}

func TestHashCollisionGetsItsOwnName(t *testing.T) {
	w := makeWorkload("b").build()
	hash := names.TemplateHash(&w.Spec.Template)
	// A revision of another template that happens to share the hash.
	other, err := Compute(makeWorkload("a").build(), nil, now)
	if err != nil {
		t.Fatal(err)
	}
	colliding := *other.Create
	colliding.Name = "web-" + hash
	colliding.Labels[TemplateHashLabel] = hash

	plan, err := Compute(w, []appsv1.ControllerRevision{colliding}, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Create == nil || plan.Create.Name != "web-"+hash+"-1" || plan.Create.Revision != 2 {
		t.Fatalf("plan.Create = %+v, want a new revision 2 named web-%s-1", plan.Create, hash)
	}
}

func TestOwned(t *testing.T) {
	w := makeWorkload("a").build()
	mine, err := Compute(w, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	foreign := mine.Create.DeepCopy()
	foreign.Name = "foreign"
	foreign.OwnerReferences[0].UID = "u-2"
	got := Owned(w, []appsv1.ControllerRevision{*mine.Create, *foreign})
	if len(got) != 1 || got[0].Name != mine.Create.Name {
		t.Fatalf("Owned() = %v, want only %s", got, mine.Create.Name)
	}
}

func TestTemplateOf(t *testing.T) {
	revs := history(t, 10, "app:1", "app:2")
	w := makeWorkload("app:1").build()
	tpl, ok := TemplateOf(revs, names.TemplateHash(&w.Spec.Template))
	if !ok || tpl.Spec.Runtime.Sandbox.Containers[0].Image != "app:1" {
		t.Fatalf("TemplateOf(app:1) = %v, %t; want the recorded template", tpl, ok)
	}
	if _, ok := TemplateOf(revs, "gone"); ok {
		t.Error("TemplateOf found a hash no revision records")
	}
	// A revision whose data no longer hashes to its label is not trusted.
	revs[0].Data.Raw = []byte(`{"spec":{"template":{}}}`)
	if _, ok := TemplateOf(revs, names.TemplateHash(&w.Spec.Template)); ok {
		t.Error("TemplateOf returned a template that does not match its hash")
	}
}
