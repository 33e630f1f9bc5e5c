package workloaddeployment

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
)

func TestExpectations(t *testing.T) {
	wd := makeWD(3).build()
	t0 := now.Time
	inst := func(k int, uid types.UID) computev1alpha.Instance {
		b := makeInst(k, "h")
		b.i.UID = uid
		return b.i
	}
	inputOf := func(insts []computev1alpha.Instance) instanceplan.Input {
		in := instanceplan.Input{Deployment: "web", Replicas: 3, TemplateHash: "h"}
		for i := range insts {
			in.Instances = append(in.Instances, instanceplan.Instance{Name: insts[i].Name, Labels: insts[i].Labels, TemplateHash: "h", Ready: true})
		}
		return in
	}
	// render lists the planner's view: name, and whether ready or deleting.
	render := func(in instanceplan.Input) []string {
		out := []string{}
		for _, i := range in.Instances {
			state := "ready"
			switch {
			case i.Deleting:
				state = "deleting"
			case !i.Ready:
				state = "not-ready"
			}
			out = append(out, i.Name+" "+state)
		}
		slices.Sort(out)
		return out
	}
	create := instanceplan.Intent{Action: instanceplan.ActionCreate, Name: "web-1", Ordinal: 1, Labels: map[string]string{computev1alpha.InstanceIndexLabel: "1"}}

	tests := map[string]struct {
		setup    func(e *expectations)
		observed []computev1alpha.Instance
		at       time.Time
		want     []string
	}{
		"nothing expected changes nothing": {
			setup:    func(*expectations) {},
			observed: []computev1alpha.Instance{inst(0, "u0")},
			at:       t0,
			want:     []string{"web-0 ready"},
		},
		"a create the cache does not show yet is there, not Ready": {
			setup:    func(e *expectations) { e.created(wd, "h", []instanceplan.Intent{create}, t0) },
			observed: []computev1alpha.Instance{inst(0, "u0")},
			at:       t0.Add(time.Second),
			want:     []string{"web-0 ready", "web-1 not-ready"},
		},
		"a create the cache shows is the cache's": {
			setup:    func(e *expectations) { e.created(wd, "h", []instanceplan.Intent{create}, t0) },
			observed: []computev1alpha.Instance{inst(0, "u0"), inst(1, "u1")},
			at:       t0.Add(time.Second),
			want:     []string{"web-0 ready", "web-1 ready"},
		},
		"an expired create is forgotten": {
			setup:    func(e *expectations) { e.created(wd, "h", []instanceplan.Intent{create}, t0) },
			observed: []computev1alpha.Instance{inst(0, "u0")},
			at:       t0.Add(time.Minute),
			want:     []string{"web-0 ready"},
		},
		"a delete the cache does not show yet is terminating": {
			setup:    func(e *expectations) { e.deleted(wd, []types.UID{"u1"}, t0) },
			observed: []computev1alpha.Instance{inst(0, "u0"), inst(1, "u1")},
			at:       t0.Add(time.Second),
			want:     []string{"web-0 ready", "web-1 deleting"},
		},
		"a delete of an Instance replaced since does not touch the successor": {
			setup:    func(e *expectations) { e.deleted(wd, []types.UID{"old"}, t0) },
			observed: []computev1alpha.Instance{inst(1, "new")},
			at:       t0.Add(time.Second),
			want:     []string{"web-1 ready"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var e expectations
			tc.setup(&e)
			got := render(e.apply(wd, inputOf(tc.observed), tc.observed, tc.at))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planner view mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpectationsAreSettledByWhatTheCacheShows(t *testing.T) {
	wd := makeWD(2).build()
	var e expectations
	e.created(wd, "h", []instanceplan.Intent{{Action: instanceplan.ActionCreate, Name: "web-0", Labels: map[string]string{computev1alpha.InstanceIndexLabel: "0"}}}, now.Time)
	e.deleted(wd, []types.UID{"u9"}, now.Time)
	seen := makeInst(0, "h")
	seen.i.UID = "u0"
	e.apply(wd, instanceplan.Input{}, []computev1alpha.Instance{seen.i}, now.Time)
	if len(e.byWD) != 0 {
		t.Errorf("expectations left after the cache showed the create and the delete: %+v", e.byWD)
	}

	// A successor of the same name starts afresh.
	e.created(wd, "h", []instanceplan.Intent{{Action: instanceplan.ActionCreate, Name: "web-1"}}, now.Time)
	successor := wd.DeepCopy()
	successor.UID = "other"
	if got := e.apply(successor, instanceplan.Input{}, nil, now.Time); len(got.Instances) != 0 {
		t.Errorf("a new deployment of the same name inherited %d expected Instances", len(got.Instances))
	}
}

func TestSummarizeNamesInstancesInOrdinalOrder(t *testing.T) {
	var insts []*computev1alpha.Instance
	for _, k := range []int{10, 2, 0, 1, 7, 3, 4} {
		b := makeInst(k, "h")
		insts = append(insts, &b.i)
	}
	if _, got := summarize(insts); got != "7 Instances: web-0, web-1, web-2, web-3, web-4 and 2 more" {
		t.Errorf("summarize = %q", got)
	}
	related, got := summarize(insts[:1])
	if got != "Instance web-10" || related == nil {
		t.Errorf("summarize of one = %q, related %v", got, related)
	}
}

func TestNextExpiryWakesTheReconcilerWhenTheFirstExpectationLapses(t *testing.T) {
	now := time.Unix(1000, 0)
	wd := &computev1alpha.WorkloadDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "a"}}
	var e expectations
	if _, ok := e.nextExpiry(wd, now); ok {
		t.Fatal("nothing expected: no wake-up")
	}
	e.created(wd, "h", []instanceplan.Intent{{Name: "web-0"}}, now)
	e.deleted(wd, []types.UID{"x"}, now.Add(10*time.Second))
	d, ok := e.nextExpiry(wd, now.Add(5*time.Second))
	if want := expectationTTL - 5*time.Second + expirySlack; !ok || d != want {
		t.Fatalf("nextExpiry() = %v, %v; want %v after the first expectation", d, ok, want)
	}
	if d, _ := e.nextExpiry(wd, now.Add(time.Hour)); d != expirySlack {
		t.Fatalf("a lapsed expectation wakes at once, got %v", d)
	}
	successor := wd.DeepCopy()
	successor.UID = "b"
	if _, ok := e.nextExpiry(successor, now); ok {
		t.Fatal("a successor of the same name inherits nothing")
	}
}
