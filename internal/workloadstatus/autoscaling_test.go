package workloadstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// autoscaled has the scenario's placement autoscale between 1 and 4 at
// 50 % cpu.
func (s *scenario) autoscaled() *scenario {
	s.w.Spec.Placements[0].ScaleSettings = computev1alpha.HorizontalScaleSettings{MinReplicas: 1, MaxReplicas: ptr.To[int32](4),
		Metrics: []computev1alpha.MetricSpec{{Resource: &computev1alpha.ResourceMetricSource{Name: "cpu",
			Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)}}}}}
	return s
}

// scaling has a city's cell report its autoscaler, ready and limited as
// given, at 3 replicas and 72 % cpu, on top of a ready deployment.
func (s *scenario) scaling(city string, ready metav1.ConditionStatus, readyReason string, limited metav1.ConditionStatus, limitedReason string) *scenario {
	s.reports[city] = func(wd *computev1alpha.WorkloadDeployment) {
		report(wd, 2, metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "ready")
		wd.Status.Conditions = append(wd.Status.Conditions,
			metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady, Status: ready, Reason: readyReason,
				Message: readyReason + " in " + city, ObservedGeneration: wd.Generation},
			metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited, Status: limited, Reason: limitedReason,
				Message: limitedReason + " in " + city, ObservedGeneration: wd.Generation})
		wd.Status.Autoscaling = &computev1alpha.AutoscalingStatus{MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 3, CurrentReplicas: 3,
			Metrics: []computev1alpha.AutoscalingMetricStatus{{Name: "cpu", Target: computev1alpha.MetricTarget{AverageUtilization: ptr.To[int32](50)},
				CurrentAverageUtilization: ptr.To[int32](72)}}}
	}
	return s
}

// autoscalingOf returns the Status/Reason/Message of both autoscaling
// conditions in conds, "absent" for one not there.
func autoscalingOf(conds []metav1.Condition) [2]string {
	var out [2]string
	for i, t := range autoscalingTypes {
		out[i] = "absent"
		if c := meta.FindStatusCondition(conds, t); c != nil {
			out[i] = string(c.Status) + "/" + c.Reason + "/" + c.Message
		}
	}
	return out
}

func TestAutoscalingAggregatesToThePlacementAndTheWorkload(t *testing.T) {
	const ready, limited = computev1alpha.ReasonAutoscalerReady, "DesiredWithinRange"
	tests := map[string]struct {
		scenario  *scenario
		placement [2]string
		workload  [2]string
	}{
		"every city ready and within its bounds": {
			scenario: makeScenario("DFW", "LHR").autoscaled().
				scaling("DFW", metav1.ConditionTrue, ready, metav1.ConditionFalse, limited).
				scaling("LHR", metav1.ConditionTrue, ready, metav1.ConditionFalse, limited),
			placement: [2]string{"True/AutoscalersReady/autoscalers ready in DFW, LHR", "False/WithinScalingLimits/within minReplicas and maxReplicas in DFW, LHR"},
			workload:  [2]string{"True/AutoscalersReady/autoscalers ready in edge", "False/WithinScalingLimits/within minReplicas and maxReplicas in edge"},
		},
		"False wins over a city not evaluated yet; True limits win": {
			scenario: makeScenario("DFW", "LHR", "SIN").autoscaled().
				scaling("DFW", metav1.ConditionFalse, computev1alpha.ReasonMetricsUnavailable, metav1.ConditionFalse, limited).
				scaling("LHR", metav1.ConditionTrue, ready, metav1.ConditionTrue, "TooManyReplicas"),
			placement: [2]string{"False/MetricsUnavailable/DFW: MetricsUnavailable in DFW",
				"True/TooManyReplicas/LHR: TooManyReplicas in LHR"},
			workload: [2]string{"False/MetricsUnavailable/edge: DFW: MetricsUnavailable in DFW",
				"True/TooManyReplicas/edge: LHR: TooManyReplicas in LHR"},
		},
		"a city not evaluated yet is pending": {
			scenario: makeScenario("DFW", "LHR").autoscaled().
				scaling("DFW", metav1.ConditionTrue, ready, metav1.ConditionFalse, limited).ready("LHR", 2),
			placement: [2]string{
				"Unknown/AwaitingAutoscaler/LHR: the LHR cell has not evaluated the current scale settings of WorkloadDeployment " + lhrName() + " yet",
				"Unknown/AwaitingAutoscaler/LHR: the LHR cell has not evaluated the current scale settings of WorkloadDeployment " + lhrName() + " yet",
			},
			workload: [2]string{
				"Unknown/AwaitingAutoscaler/edge: LHR: the LHR cell has not evaluated the current scale settings of WorkloadDeployment " + lhrName() + " yet",
				"Unknown/AwaitingAutoscaler/edge: LHR: the LHR cell has not evaluated the current scale settings of WorkloadDeployment " + lhrName() + " yet",
			},
		},
		"no city has a deployment yet": {
			scenario: makeScenario("DFW").autoscaled().notCreated("DFW"),
			placement: [2]string{"Unknown/AwaitingAutoscaler/no city of the placement has a WorkloadDeployment yet",
				"Unknown/AwaitingAutoscaler/no city of the placement has a WorkloadDeployment yet"},
			workload: [2]string{"Unknown/AwaitingAutoscaler/edge: no city of the placement has a WorkloadDeployment yet",
				"Unknown/AwaitingAutoscaler/edge: no city of the placement has a WorkloadDeployment yet"},
		},
		"no placement autoscales: neither condition": {
			scenario:  makeScenario("DFW").ready("DFW", 2),
			placement: [2]string{"absent", "absent"},
			workload:  [2]string{"absent", "absent"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := Compute(tc.scenario.input())
			got := [2][2]string{autoscalingOf(st.Placements[0].Conditions), autoscalingOf(st.Conditions)}
			if diff := cmp.Diff([2][2]string{tc.placement, tc.workload}, got); diff != "" {
				t.Fatalf("placement, Workload autoscaling conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func lhrName() string {
	in := makeScenario("LHR").input()
	return in.Cities[0].Name
}

func TestAStaleAutoscalingConditionIsPending(t *testing.T) {
	tests := map[string]func(wd *computev1alpha.WorkloadDeployment){
		"older than the generation the cell reports": func(wd *computev1alpha.WorkloadDeployment) {
			wd.Generation, wd.Status.ObservedGeneration = 2, 2
		},
		"set for other scale settings than the placement's": func(wd *computev1alpha.WorkloadDeployment) {
			wd.Spec.ScaleSettings.MaxReplicas = ptr.To[int32](8)
		},
		"reporting other bounds than the placement's": func(wd *computev1alpha.WorkloadDeployment) {
			wd.Status.Autoscaling.MaxReplicas = 8
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			in := makeScenario("DFW").autoscaled().
				scaling("DFW", metav1.ConditionTrue, computev1alpha.ReasonAutoscalerReady, metav1.ConditionFalse, "DesiredWithinRange").input()
			change(in.Cities[0].Deployment)
			st := Compute(in)
			for _, c := range [][]metav1.Condition{st.Placements[0].Conditions, st.Conditions} {
				for _, typ := range autoscalingTypes {
					if got := meta.FindStatusCondition(c, typ); got == nil || got.Status != metav1.ConditionUnknown || got.Reason != computev1alpha.ReasonAwaitingAutoscaler {
						t.Errorf("%s = %+v, want Unknown AwaitingAutoscaler", typ, got)
					}
				}
			}
		})
	}
}

func TestACityCarriesWhatItsAutoscalerReports(t *testing.T) {
	in := makeScenario("DFW").autoscaled().
		scaling("DFW", metav1.ConditionTrue, computev1alpha.ReasonAutoscalerReady, metav1.ConditionFalse, "DesiredWithinRange").input()
	st := Compute(in)
	if diff := cmp.Diff(in.Cities[0].Deployment.Status.Autoscaling, st.Placements[0].Cities[0].Autoscaling); diff != "" {
		t.Fatalf("city autoscaling (-deployment +city):\n%s", diff)
	}
	// Stable: the status fed back changes nothing, so nothing is written.
	in.Workload = in.Workload.DeepCopy()
	in.Workload.Status = st
	if diff := cmp.Diff(st, Compute(in)); diff != "" {
		t.Fatalf("an unchanged world changes the status (-first +second):\n%s", diff)
	}

	// Autoscaling removed from the placement: the city no longer shows
	// what the cell last reported, and both conditions go.
	in.Workload.Spec.Placements[0].ScaleSettings = computev1alpha.HorizontalScaleSettings{MinReplicas: 1}
	in.Cities[0].Deployment.Spec.ScaleSettings = in.Workload.Spec.Placements[0].ScaleSettings
	st = Compute(in)
	if st.Placements[0].Cities[0].Autoscaling != nil {
		t.Errorf("city autoscaling = %+v after autoscaling was removed, want none", st.Placements[0].Cities[0].Autoscaling)
	}
	if got := [2][2]string{autoscalingOf(st.Placements[0].Conditions), autoscalingOf(st.Conditions)}; got != [2][2]string{{"absent", "absent"}, {"absent", "absent"}} {
		t.Errorf("autoscaling conditions after autoscaling was removed = %v, want none", got)
	}
}
