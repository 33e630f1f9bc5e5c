package deploy

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/test/clitest"
)

func TestWavePlanSaysHowAChangeTravelsBetweenCities(t *testing.T) {
	withRollout := func(r *computev1alpha.WorkloadRollout) *computev1alpha.Workload {
		w := clitest.NewWorkload("web").Build()
		w.Spec.Placements[0].CityCodes = []string{"SIN", "DFW", "LHR"}
		w.Spec.Rollout = r
		return w
	}
	tests := map[string]struct {
		workload *computev1alpha.Workload
		want     string
	}{
		"without spec.rollout every city at once": {
			workload: withRollout(nil),
			want:     "Every city gets the new template at once; inside each city instances are replaced a few at a time, so the workload keeps serving.",
		},
		"explicit waves with a soak time and rollback": {
			workload: withRollout(&computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.WavesCityRollout, Waves: []computev1alpha.RolloutWave{{CityCodes: []string{"DFW"}}},
				SoakSeconds: ptr.To(int32(300)), OnFailure: computev1alpha.RollbackOnFailure,
			}),
			want: "Cities get the new template in the waves of spec.rollout (Waves): DFW → LHR, SIN.\n" +
				"Each wave must be ready for 5m0s before the next starts; a failing city halts the rollout and its wave is rolled back.",
		},
		"a canary with manual approval": {
			workload: withRollout(&computev1alpha.WorkloadRollout{
				Strategy: computev1alpha.CanaryCityRollout, Approval: computev1alpha.ManualRolloutApproval,
				Canary: &computev1alpha.CanaryRollout{CityCode: "LHR", WaveSize: ptr.To(intstr.FromInt32(1))},
			}),
			want: "Cities get the new template canary first (Canary): LHR → DFW, SIN, 1 at a time.\n" +
				"Each wave must be ready before the next starts and is approved with `rollout approve`; a failing city halts the rollout.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := WavePlan(tc.workload); got != tc.want {
				t.Errorf("WavePlan() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
