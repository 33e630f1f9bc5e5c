package instanceplan

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestCompute(t *testing.T) {
	tests := map[string]struct {
		in   *inputBuilder
		want []string
	}{
		// Creates.
		"OrderedReady creates only ordinal 0 of an empty deployment": {
			in:   makeInput(3),
			want: []string{"create web-0"},
		},
		"OrderedReady waits for the previous instance to be Ready before creating the next": {
			in:   makeInput(3).with(slot(0).notReady()),
			want: []string{"wait for instance web-0 to be Ready"},
		},
		"OrderedReady creates the next ordinal once every lower one is Ready": {
			in:   makeInput(3).with(slot(0), slot(1)),
			want: []string{"create web-2"},
		},
		"OrderedReady refills a hole before creating anything above it": {
			in:   makeInput(4).with(slot(0), slot(2)),
			want: []string{"create web-1"},
		},
		"OrderedReady does not create while a lower instance is terminating": {
			in:   makeInput(3).with(slot(0).deleting()),
			want: []string{"wait for instance web-0 to be Ready"},
		},
		"an empty policy means OrderedReady": {
			in:   makeInput(3).policy(""),
			want: []string{"create web-0"},
		},
		"Parallel creates every missing ordinal at once": {
			in:   makeInput(3).parallel(),
			want: []string{"create web-0", "create web-1", "create web-2"},
		},
		"Parallel creates missing ordinals while others are not Ready": {
			in:   makeInput(3).parallel().with(slot(1).notReady()),
			want: []string{"create web-0", "create web-2"},
		},
		"a converged deployment needs nothing": {
			in:   makeInput(2).with(slot(0), slot(1)),
			want: []string{},
		},
		"a deployment at zero replicas with no instances needs nothing": {
			in:   makeInput(0),
			want: []string{},
		},

		// Scale down.
		"OrderedReady scales down the highest ordinal first": {
			in:   makeInput(1).with(slot(0), slot(1), slot(2)),
			want: []string{"delete web-2 (OrdinalOutOfRange)", "wait for instance web-2 to be removed"},
		},
		"OrderedReady waits for a terminating instance before removing the next": {
			in:   makeInput(1).with(slot(0), slot(1), slot(2).deleting()),
			want: []string{"wait for instance web-2 to be removed"},
		},
		"OrderedReady scales down even when instances are not Ready": {
			in:   makeInput(1).with(slot(0).notReady(), slot(1).notReady()),
			want: []string{"delete web-1 (OrdinalOutOfRange)", "wait for instance web-1 to be removed"},
		},
		"Parallel scales down every out-of-range instance at once": {
			in:   makeInput(1).parallel().with(slot(0), slot(1), slot(2)),
			want: []string{"delete web-2 (OrdinalOutOfRange)", "delete web-1 (OrdinalOutOfRange)", "wait for 2 stray instance(s) to be removed"},
		},
		"scaling to zero removes the last instance": {
			in:   makeInput(0).with(slot(0)),
			want: []string{"delete web-0 (OrdinalOutOfRange)", "wait for instance web-0 to be removed"},
		},

		// Strays.
		"an instance without instance-index is a stray removed first": {
			in:   makeInput(2).with(slot(0), slot(1), slot(5).named("web-x").noIndex()),
			want: []string{"delete web-x (MissingIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"a negative instance-index is invalid": {
			in:   makeInput(2).parallel().with(slot(0), slot(1), slot(0).named("web-x").index("-1")),
			want: []string{"delete web-x (InvalidIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"a zero-padded instance-index is invalid": {
			in:   makeInput(2).parallel().with(slot(0), slot(1), slot(0).named("web-x").index("01")),
			want: []string{"delete web-x (InvalidIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"a non-numeric instance-index is invalid": {
			in:   makeInput(2).parallel().with(slot(0), slot(1), slot(0).named("web-x").index("one")),
			want: []string{"delete web-x (InvalidIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"a duplicate instance-index keeps the instance with the slot's own name": {
			in:   makeInput(2).with(slot(0), slot(1), slot(1).named("web-a")),
			want: []string{"delete web-a (DuplicateIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"a duplicate instance-index keeps a live instance over a terminating one": {
			in:   makeInput(1).with(slot(0).deleting(), slot(0).named("web-a")),
			want: []string{"wait for 1 stray instance(s) to be removed"},
		},
		"a duplicate instance-index keeps the Ready instance when neither has the slot's name": {
			in:   makeInput(1).with(slot(0).named("web-b").notReady(), slot(0).named("web-a")),
			want: []string{"delete web-b (DuplicateIndex)", "wait for 1 stray instance(s) to be removed"},
		},
		"an instance holding another slot's name is a stray": {
			in:   makeInput(3).parallel().with(slot(0), slot(1).named("web-2")),
			want: []string{"delete web-2 (NameConflict)", "create web-1", "wait for 1 stray instance(s) to be removed"},
		},
		"a slot whose name is still taken by a terminating stray is not created yet": {
			in:   makeInput(3).parallel().with(slot(0), slot(1), slot(2).named("web-2").noIndex().deleting()),
			want: []string{"wait for 1 stray instance(s) to be removed"},
		},
		"an instance with an odd name in its own slot keeps the slot": {
			in:   makeInput(2).with(slot(0), slot(1).named("legacy")),
			want: []string{},
		},
		"OrderedReady does nothing else while strays remain": {
			in:   makeInput(3).with(slot(0), slot(0).named("web-a").noIndex().deleting()),
			want: []string{"wait for 1 stray instance(s) to be removed"},
		},
		"Parallel creates missing slots while strays go, but does not roll": {
			in:   makeInput(3).parallel().with(slot(0).outdated(), slot(3)),
			want: []string{"delete web-3 (OrdinalOutOfRange)", "create web-1", "create web-2", "wait for 1 stray instance(s) to be removed"},
		},
		"strays without a place go before out-of-range ones, each group in a strict order": {
			in: makeInput(1).parallel().with(slot(0), slot(4), slot(2), slot(9).named("web-b").noIndex(), slot(9).named("web-a").index("x")),
			want: []string{
				"delete web-a (InvalidIndex)", "delete web-b (MissingIndex)",
				"delete web-4 (OrdinalOutOfRange)", "delete web-2 (OrdinalOutOfRange)",
				"wait for 4 stray instance(s) to be removed",
			},
		},

		// Rollouts.
		"a template change replaces the newest ordinal first": {
			in:   makeInput(3).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated()),
			want: []string{"delete web-2 (OutdatedTemplate)", "wait for 1 unavailable instance(s) to be Ready before replacing web-1"},
		},
		"a rollout waits while a replaced instance is not Ready yet": {
			in:   makeInput(3).with(slot(0).outdated(), slot(1).outdated(), slot(2).notReady()),
			want: []string{"wait for 1 unavailable instance(s) to be Ready before replacing web-1"},
		},
		"a rollout waits while a replaced instance is terminating": {
			in:   makeInput(3).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated().deleting()),
			want: []string{"wait for 1 unavailable instance(s) to be Ready before replacing web-1"},
		},
		"a rollout refills the slot it emptied": {
			in:   makeInput(3).with(slot(0).outdated(), slot(1).outdated()),
			want: []string{"create web-2", "wait for 1 unavailable instance(s) to be Ready before replacing web-1"},
		},
		"maxUnavailable 2 replaces two instances at once": {
			in:   makeInput(3).maxUnavailable(2).with(slot(0).outdated(), slot(1).outdated(), slot(2).outdated()),
			want: []string{"delete web-2 (OutdatedTemplate)", "delete web-1 (OutdatedTemplate)", "wait for 2 unavailable instance(s) to be Ready before replacing web-0"},
		},
		"outdated instances that are not Ready are replaced without using the budget": {
			in:   makeInput(3).with(slot(0).outdated().notReady(), slot(1).outdated().notReady(), slot(2).outdated().notReady()),
			want: []string{"delete web-2 (OutdatedTemplate)", "delete web-1 (OutdatedTemplate)", "delete web-0 (OutdatedTemplate)"},
		},
		"OrderedReady updates stop at the first instance they may not take down": {
			in:   makeInput(3).with(slot(0).outdated().notReady(), slot(1).outdated(), slot(2).outdated()),
			want: []string{"wait for 1 unavailable instance(s) to be Ready before replacing web-2"},
		},
		"Parallel updates go on to outdated instances that are not Ready": {
			in:   makeInput(3).parallel().with(slot(0).outdated().notReady(), slot(1).outdated(), slot(2).outdated()),
			want: []string{"delete web-0 (OutdatedTemplate)", "wait for 1 unavailable instance(s) to be Ready before replacing web-2"},
		},
		"an instance without a template hash is outdated": {
			in:   makeInput(1).with(slot(0).hash("")),
			want: []string{"delete web-0 (OutdatedTemplate)"},
		},

		// Label back-fill.
		"missing linking labels are back-filled without using the rollout budget": {
			in:   makeInput(2).with(slot(0).without(computev1alpha.WorkloadUIDLabel, computev1alpha.CityCodeLabel), slot(1).outdated()),
			want: []string{"label web-0 city-code=DFW,workload-uid=w-uid", "delete web-1 (OutdatedTemplate)"},
		},
		"a wrong linking label value is corrected": {
			in:   makeInput(1).with(slot(0).label(computev1alpha.WorkloadDeploymentUIDLabel, "other")),
			want: []string{"label web-0 workload-deployment-uid=wd-uid"},
		},
		"labels are back-filled while OrderedReady waits": {
			in:   makeInput(2).with(slot(0).notReady().without(computev1alpha.PlacementNameLabel)),
			want: []string{"label web-0 placement-name=default", "wait for instance web-0 to be Ready"},
		},
		"terminating and stray instances are not back-filled": {
			in:   makeInput(1).with(slot(0).deleting().without(computev1alpha.WorkloadUIDLabel), slot(1).without(computev1alpha.WorkloadUIDLabel)),
			want: []string{"delete web-1 (OrdinalOutOfRange)", "wait for instance web-1 to be removed"},
		},
		"other labels on an instance are left alone": {
			in:   makeInput(1).with(slot(0).label("team", "blue")),
			want: []string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Compute(tc.in.build()).Lines()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeIgnoresInputOrder(t *testing.T) {
	in := makeInput(3).parallel().with(
		slot(0).outdated(), slot(0).named("web-a"), slot(1).notReady().outdated(), slot(5),
		slot(4), slot(2).named("web-z").noIndex(), slot(2).named("web-y").index("02"),
		slot(2).without(computev1alpha.CityCodeLabel).outdated(),
	).build()
	want := Compute(in).Lines()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		rng.Shuffle(len(in.Instances), func(i, j int) { in.Instances[i], in.Instances[j] = in.Instances[j], in.Instances[i] })
		if diff := cmp.Diff(want, Compute(in).Lines()); diff != "" {
			t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
		}
	}
}

func TestCreateIntentCarriesEveryLinkingLabel(t *testing.T) {
	p := Compute(makeInput(1).build())
	if len(p.Intents) != 1 || p.Intents[0].Action != ActionCreate {
		t.Fatalf("want one create, got %v", p.Lines())
	}
	want := map[string]string{computev1alpha.InstanceIndexLabel: "0"}
	for k, v := range linking {
		want[k] = v
	}
	if diff := cmp.Diff(want, p.Intents[0].Labels); diff != "" {
		t.Errorf("create labels mismatch (-want +got):\n%s", diff)
	}
}

func TestOrdinal(t *testing.T) {
	tests := map[string]struct {
		labels                 map[string]string
		wantOrdinal            int
		wantPresent, wantValid bool
	}{
		"a canonical number is valid":      {labels: map[string]string{computev1alpha.InstanceIndexLabel: "12"}, wantOrdinal: 12, wantPresent: true, wantValid: true},
		"zero is valid":                    {labels: map[string]string{computev1alpha.InstanceIndexLabel: "0"}, wantOrdinal: 0, wantPresent: true, wantValid: true},
		"no label is absent":               {labels: map[string]string{}, wantOrdinal: -1},
		"an empty value is invalid":        {labels: map[string]string{computev1alpha.InstanceIndexLabel: ""}, wantOrdinal: -1, wantPresent: true},
		"a plus sign is invalid":           {labels: map[string]string{computev1alpha.InstanceIndexLabel: "+1"}, wantOrdinal: -1, wantPresent: true},
		"a leading zero is invalid":        {labels: map[string]string{computev1alpha.InstanceIndexLabel: "007"}, wantOrdinal: -1, wantPresent: true},
		"an overflowing number is invalid": {labels: map[string]string{computev1alpha.InstanceIndexLabel: "99999999999999999999"}, wantOrdinal: -1, wantPresent: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, present, valid := Ordinal(tc.labels)
			if o != tc.wantOrdinal || present != tc.wantPresent || valid != tc.wantValid {
				t.Errorf("Ordinal = (%d, %t, %t), want (%d, %t, %t)", o, present, valid, tc.wantOrdinal, tc.wantPresent, tc.wantValid)
			}
		})
	}
}

func FuzzOrdinal(f *testing.F) {
	for _, s := range []string{"0", "1", "01", "-1", "+1", "", "x", "999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		o, present, valid := Ordinal(map[string]string{computev1alpha.InstanceIndexLabel: v})
		if !present {
			t.Fatal("a set label must be present")
		}
		if valid != (o >= 0) {
			t.Fatalf("valid=%t but ordinal %d", valid, o)
		}
	})
}
