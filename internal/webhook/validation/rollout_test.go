package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// withRollout sets spec.rollout.
func (w *workloadBuilder) withRollout(r computev1alpha.WorkloadRollout) *workloadBuilder {
	w.Spec.Rollout = &r
	return w
}

func wavesOf(codes ...[]string) []computev1alpha.RolloutWave {
	out := make([]computev1alpha.RolloutWave, 0, len(codes))
	for _, c := range codes {
		out = append(out, computev1alpha.RolloutWave{CityCodes: c})
	}
	return out
}

func TestValidateRollout(t *testing.T) {
	env := bound("DFW", "LHR", "SIN")
	three := func(w *computev1alpha.Workload) { w.Spec.Placements[0].CityCodes = []string{"DFW", "LHR", "SIN"} }
	tests := map[string]struct {
		workload *computev1alpha.Workload
		want     []violation
	}{
		"explicit waves of the Workload's cities are accepted": {
			workload: makeWorkload().with(three).withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{"DFW"}, []string{"LHR", "SIN"}),
				SoakSeconds: ptr.To(int32(300)), ProgressDeadlineSeconds: ptr.To(int32(600)),
				MaxUnavailableCities: ptr.To(intstr.FromString("50%")), OnFailure: computev1alpha.RollbackOnFailure,
			}).build(),
		},
		"a canary with a wave size is accepted": {
			workload: makeWorkload().with(three).withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.CanaryCityRollout,
				Canary:   &computev1alpha.CanaryRollout{CityCode: "LHR", WaveSize: ptr.To(intstr.FromInt32(1))},
			}).build(),
		},
		"strategy Waves without waves is rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{Strategy: computev1alpha.WavesCityRollout}).build(),
			want:     []violation{{field.ErrorTypeRequired, "spec.rollout.waves"}},
		},
		"waves with another strategy are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.AllAtOnceCityRollout, Waves: wavesOf([]string{"DFW"}),
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.rollout.waves"}},
		},
		"a city in two waves is rejected where it repeats": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{"DFW"}, []string{"LHR", "DFW"}),
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.rollout.waves[1].cityCodes[1]"}},
		},
		"a wave city that no placement names is rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{"DFW"}, []string{"SIN"}),
			}).build(),
			want: []violation{{field.ErrorTypeInvalid, "spec.rollout.waves[1].cityCodes[0]"}},
		},
		"an empty wave and a malformed city are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{}, []string{"dfw"}),
			}).build(),
			want: []violation{
				{field.ErrorTypeRequired, "spec.rollout.waves[0].cityCodes"},
				{field.ErrorTypeInvalid, "spec.rollout.waves[1].cityCodes[0]"},
			},
		},
		"a canary city outside the Workload, and a bad wave size, are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.CanaryCityRollout,
				Canary:   &computev1alpha.CanaryRollout{CityCode: "SIN", WaveSize: ptr.To(intstr.FromString("150%"))},
			}).build(),
			want: []violation{
				{field.ErrorTypeInvalid, "spec.rollout.canary.cityCode"},
				{field.ErrorTypeInvalid, "spec.rollout.canary.waveSize"},
			},
		},
		"canary settings with another strategy are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.AllAtOnceCityRollout, Canary: &computev1alpha.CanaryRollout{},
			}).build(),
			want: []violation{{field.ErrorTypeForbidden, "spec.rollout.canary"}},
		},
		"out-of-range times and counts are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				MaxUnavailableCities: ptr.To(intstr.FromInt32(0)),
				SoakSeconds:          ptr.To(int32(-1)), ProgressDeadlineSeconds: ptr.To(int32(0)),
			}).build(),
			want: []violation{
				{field.ErrorTypeInvalid, "spec.rollout.maxUnavailableCities"},
				{field.ErrorTypeInvalid, "spec.rollout.progressDeadlineSeconds"},
				{field.ErrorTypeInvalid, "spec.rollout.soakSeconds"},
			},
		},
		"unknown enum values are rejected": {
			workload: makeWorkload().withRollout(computev1alpha.WorkloadRollout{
				Strategy: "Random", OnFailure: "Ignore", Approval: "Sometimes",
			}).build(),
			want: []violation{
				{field.ErrorTypeNotSupported, "spec.rollout.approval"},
				{field.ErrorTypeNotSupported, "spec.rollout.onFailure"},
				{field.ErrorTypeNotSupported, "spec.rollout.strategy"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := violations(ValidateWorkloadCreate(tc.workload, env))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ValidateWorkloadCreate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutErrorsSayWhatToDo(t *testing.T) {
	w := makeWorkload().withRollout(computev1alpha.WorkloadRollout{
		Strategy: computev1alpha.WavesCityRollout, Waves: wavesOf([]string{"NRT"}),
	}).build()
	errs := ValidateWorkloadCreate(w, bound("DFW", "LHR"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "the Workload's cities: DFW, LHR") {
		t.Fatalf("errors = %v, want one naming the Workload's cities", errs)
	}
}

func TestDefaultRollout(t *testing.T) {
	w := makeWorkload().withRollout(computev1alpha.WorkloadRollout{}).build()
	DefaultWorkload(w)
	want := computev1alpha.WorkloadRollout{
		Strategy: computev1alpha.AllAtOnceCityRollout, OnFailure: computev1alpha.HaltOnFailure, Approval: computev1alpha.AutomaticRolloutApproval,
	}
	if diff := cmp.Diff(want, *w.Spec.Rollout); diff != "" {
		t.Fatalf("defaults (-want +got):\n%s", diff)
	}
	if w := makeWorkload().build(); func() bool { DefaultWorkload(w); return w.Spec.Rollout != nil }() {
		t.Fatal("defaulting added spec.rollout to a Workload without one: nothing existing may change")
	}
}
