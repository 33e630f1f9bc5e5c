package instanceplan

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// world is a toy cell for the planner: it applies a plan, then lets time
// pass: terminating Instances disappear and Instances made from a template
// that is not broken become Ready.
type world struct {
	instances map[string]Instance
	broken    map[string]bool // template hashes whose Instances never get Ready
	hash      string          // the template new Instances are created from
}

func newWorld(in Input) *world {
	w := &world{instances: map[string]Instance{}, broken: map[string]bool{}, hash: in.TemplateHash}
	for _, i := range in.Instances {
		w.instances[i.Name] = i
	}
	return w
}

// apply carries out a plan the way the controller would.
func (w *world) apply(p Plan) {
	for _, i := range p.Intents {
		switch i.Action {
		case ActionPatchLabels:
			inst := w.instances[i.Name]
			inst.Labels = maps.Clone(inst.Labels)
			maps.Copy(inst.Labels, i.Labels)
			w.instances[i.Name] = inst
		case ActionDelete:
			inst := w.instances[i.Name]
			inst.Deleting, inst.Ready = true, false
			w.instances[i.Name] = inst
		case ActionCreate:
			w.instances[i.Name] = Instance{Name: i.Name, Labels: maps.Clone(i.Labels), TemplateHash: w.hash}
		}
	}
}

// tick lets time pass.
func (w *world) tick() {
	for name, inst := range w.instances {
		switch {
		case inst.Deleting:
			delete(w.instances, name)
		case !w.broken[inst.TemplateHash]:
			inst.Ready = true
			w.instances[name] = inst
		}
	}
}

// snapshot renders the Instances, sorted by name.
func (w *world) snapshot() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(w.instances)) {
		i := w.instances[name]
		state := "ready"
		if !i.Ready {
			state = "not-ready"
		}
		parts = append(parts, fmt.Sprintf("%s[%s %s]", name, i.TemplateHash, state))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " ")
}

// run steps in against w until the plan is empty, recording each step.
func (w *world) run(in Input) string {
	var b strings.Builder
	for step := 1; step <= 40; step++ {
		in.Instances = slices.Collect(maps.Values(w.instances))
		p := Compute(in)
		if len(p.Intents) == 0 {
			fmt.Fprintf(&b, "done: %s\n", w.snapshot())
			if p.Waiting != "" {
				fmt.Fprintf(&b, "stuck: waiting for %s\n", p.Waiting)
			}
			return b.String()
		}
		fmt.Fprintf(&b, "step %d: %s\n", step, w.snapshot())
		for _, l := range p.Lines() {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		w.apply(p)
		w.tick()
	}
	return b.String() + "gave up after 40 steps\n"
}

func TestSimulatedRollouts(t *testing.T) {
	tests := map[string]struct {
		in     *inputBuilder
		broken []string
	}{
		"ordered-scale-up-from-zero": {
			in: makeInput(3),
		},
		"parallel-scale-up-from-zero": {
			in: makeInput(3).parallel(),
		},
		"ordered-scale-down": {
			in: makeInput(1).with(slot(0), slot(1), slot(2), slot(3)),
		},
		"parallel-scale-down": {
			in: makeInput(1).parallel().with(slot(0), slot(1), slot(2), slot(3)),
		},
		"ordered-restart-one-at-a-time": {
			in: makeInput(3).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated()),
		},
		"parallel-restart-max-unavailable-2": {
			in: makeInput(4).parallel().maxUnavailable(2).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated(), slot(3).outdated()),
		},
		"fix-a-broken-template": {
			in:     makeInput(3).with(slot(0).outdated().notReady(), slot(1).outdated().notReady(), slot(2).outdated().notReady()),
			broken: []string{oldHash},
		},
		"a-broken-template-stops-the-rollout": {
			in:     makeInput(3).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated()),
			broken: []string{newHash},
		},
		"strays-and-missing-labels-then-scale-up": {
			in: makeInput(3).with(
				slot(0).without("compute.datumapis.com/workload-uid"),
				slot(0).named("web-dup"),
				slot(0).named("web-orphan").noIndex(),
				slot(7),
			),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := tc.in.build()
			w := newWorld(in)
			for _, h := range tc.broken {
				w.broken[h] = true
			}
			got := w.run(in)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("failed to read golden file (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
			}
		})
	}
}
