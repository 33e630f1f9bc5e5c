package federation

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

var (
	earlier = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	now     = metav1.NewTime(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC))
)

// hubCopyOf builds the hub copy of project at hub generation gen, copied from
// project generation copied, with Karmada's aggregated observedGeneration
// observed and ready of 2 replicas ready.
func hubCopyOf(project *computev1alpha.WorkloadDeployment, gen, copied, observed int64, ready int32) *computev1alpha.WorkloadDeployment {
	h := HubCopy("single", "ns-1", project)
	h.Generation = gen
	h.Annotations[UpstreamGenerationAnnotation] = strconv.FormatInt(copied, 10)
	h.Status.ObservedGeneration = observed
	h.Status.ReplicaCounts = computev1alpha.ReplicaCounts{Replicas: 2, CurrentReplicas: ready, UpdatedReplicas: 2, ReadyReplicas: ready, DesiredReplicas: 2}
	h.Status.TemplateHash = "h1"
	h.Status.Selector = "compute.datumapis.com/workload-deployment-uid=cell"
	h.Status.Conditions = []metav1.Condition{{
		Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasAvailable,
		Message: "ready", LastTransitionTime: earlier, ObservedGeneration: observed,
	}}
	return h
}

func TestUpstreamGeneration(t *testing.T) {
	tests := map[string]struct {
		projectGen, reported int64
		hubGen, copied, obs  int64
		want                 int64
	}{
		"every cell caught up with the copy: the project generation it was copied from": {
			projectGen: 4, reported: 3, hubGen: 7, copied: 4, obs: 7, want: 4,
		},
		"a cell still behind the copy: what the project already reports": {
			projectGen: 4, reported: 3, hubGen: 7, copied: 4, obs: 6, want: 3,
		},
		"a copy older than the project's report never takes it back": {
			projectGen: 5, reported: 5, hubGen: 7, copied: 4, obs: 7, want: 5,
		},
		"a copy claiming a generation the project does not have yet is ignored": {
			projectGen: 4, reported: 3, hubGen: 7, copied: 9, obs: 7, want: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			project := makeWD("default", "web", "DFW").withGeneration(tc.projectGen).build()
			project.Status.ObservedGeneration = tc.reported
			if got := UpstreamGeneration(project, hubCopyOf(project, tc.hubGen, tc.copied, tc.obs, 2)); got != tc.want {
				t.Errorf("UpstreamGeneration() = %d, want %d", got, tc.want)
			}
		})
	}

	project := makeWD("default", "web", "DFW").build()
	unannotated := hubCopyOf(project, 2, 4, 2, 2)
	delete(unannotated.Annotations, UpstreamGenerationAnnotation)
	if got := UpstreamGeneration(project, unannotated); got != 0 {
		t.Errorf("a copy without the generation annotation gave %d, want 0", got)
	}
}

func TestMirrorStatus(t *testing.T) {
	project := makeWD("default", "web", "DFW").build()
	project.Status.Conditions = []metav1.Condition{{
		Type: computev1alpha.ConditionFederated, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonFederated,
		Message: "copied to namespace ns-1 of the federation plane", LastTransitionTime: earlier, ObservedGeneration: 3,
	}}
	hubCopy := hubCopyOf(project, 2, 4, 2, 1)

	got := MirrorStatus(project, hubCopy, federatedCondition("ns-1"), Reachability{}, now)
	want := computev1alpha.WorkloadDeploymentStatus{
		ObservedGeneration: 4,
		ReplicaCounts:      computev1alpha.ReplicaCounts{Replicas: 2, CurrentReplicas: 1, UpdatedReplicas: 2, ReadyReplicas: 1, DesiredReplicas: 2},
		TemplateHash:       "h1",
		Selector:           "compute.datumapis.com/workload-deployment-uid=cell",
		Conditions: []metav1.Condition{
			{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasAvailable,
				Message: "ready", LastTransitionTime: earlier, ObservedGeneration: 4},
			{Type: computev1alpha.ConditionFederated, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonFederated,
				Message: "copied to namespace ns-1 of the federation plane", LastTransitionTime: earlier, ObservedGeneration: 4},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MirrorStatus() mismatch (-want +got):\n%s", diff)
	}

	t.Run("mirroring the same hub status again changes nothing", func(t *testing.T) {
		again := project.DeepCopy()
		again.Status = got
		if diff := cmp.Diff(got, MirrorStatus(again, hubCopy, federatedCondition("ns-1"), Reachability{}, now)); diff != "" {
			t.Errorf("status churned (-first +second):\n%s", diff)
		}
	})

	t.Run("a failure without a hub copy keeps the mirrored status and says why", func(t *testing.T) {
		failing := project.DeepCopy()
		failing.Status = got
		st := MirrorStatus(failing, nil, failedCondition("failed to create namespace ns-1: forbidden"), Reachability{}, now)
		if st.ReadyReplicas != 1 || st.ObservedGeneration != 4 {
			t.Errorf("the mirrored counts were lost: %+v", st)
		}
		fed := st.Conditions[1]
		if fed.Status != metav1.ConditionFalse || fed.Reason != computev1alpha.ReasonFederationFailed ||
			!fed.LastTransitionTime.Equal(&now) || fed.Message != "failed to create namespace ns-1: forbidden" {
			t.Errorf("Federated = %+v", fed)
		}
	})

	t.Run("a Federated condition reported by the hub is not mirrored", func(t *testing.T) {
		odd := hubCopy.DeepCopy()
		odd.Status.Conditions = append(odd.Status.Conditions, metav1.Condition{Type: computev1alpha.ConditionFederated, Status: metav1.ConditionFalse})
		st := MirrorStatus(project, odd, federatedCondition("ns-1"), Reachability{}, now)
		if n := len(st.Conditions); n != 2 || st.Conditions[1].Status != metav1.ConditionTrue {
			t.Errorf("conditions = %+v", st.Conditions)
		}
	})

	t.Run("the city's autoscaler and its verdicts are mirrored, and stale while the city is unreachable", func(t *testing.T) {
		scaling := hubCopy.DeepCopy()
		scaling.Status.Autoscaling = &computev1alpha.AutoscalingStatus{MinReplicas: 1, MaxReplicas: 4, DesiredReplicas: 3, CurrentReplicas: 2}
		scaling.Status.Conditions = append(scaling.Status.Conditions,
			metav1.Condition{Type: computev1alpha.ConditionAutoscalingReady, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonAutoscalerReady, LastTransitionTime: earlier},
			metav1.Condition{Type: computev1alpha.ConditionAutoscalingLimited, Status: metav1.ConditionFalse, Reason: "DesiredWithinRange", LastTransitionTime: earlier})
		st := MirrorStatus(project, scaling, federatedCondition("ns-1"), Reachability{}, now)
		if diff := cmp.Diff(scaling.Status.Autoscaling, st.Autoscaling); diff != "" {
			t.Errorf("status.autoscaling (-hub +project):\n%s", diff)
		}
		if c := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAutoscalingReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 4 {
			t.Errorf("AutoscalingReady = %+v", c)
		}
		st = MirrorStatus(project, scaling, federatedCondition("ns-1"), Reachability{Unreachable: true, LastSeen: earlier.Time, Message: "no heartbeat"}, now)
		for _, ct := range []string{computev1alpha.ConditionAutoscalingReady, computev1alpha.ConditionAutoscalingLimited} {
			if c := meta.FindStatusCondition(st.Conditions, ct); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != computev1alpha.ReasonCellUnreachable {
				t.Errorf("%s of an unreachable city = %+v", ct, c)
			}
		}
		if st := MirrorStatus(project, hubCopy, federatedCondition("ns-1"), Reachability{}, now); st.Autoscaling != nil {
			t.Errorf("autoscaling removed in the hub stays in the project: %+v", st.Autoscaling)
		}
	})

	t.Run("an unreachable city keeps its last known counts and says it is stale, without churning", func(t *testing.T) {
		seen := earlier.Add(-time.Minute)
		reach := Reachability{Unreachable: true, LastSeen: seen, Message: "no heartbeat from cell cell-dfw since then"}
		st := MirrorStatus(project, hubCopy, federatedCondition("ns-1"), reach, now)
		if st.ReadyReplicas != 1 || st.Replicas != 2 || st.LastSeenTime == nil || !st.LastSeenTime.Time.Equal(seen) {
			t.Errorf("counts or lastSeenTime lost: %+v", st)
		}
		avail := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAvailable)
		if avail == nil || avail.Status != metav1.ConditionUnknown || avail.Reason != computev1alpha.ReasonCellUnreachable ||
			!strings.Contains(avail.Message, "last known: Available=True (ReplicasAvailable)") || !avail.LastTransitionTime.Equal(&now) {
			t.Errorf("Available = %+v", avail)
		}
		if fed := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionFederated); fed == nil || fed.Status != metav1.ConditionTrue {
			t.Errorf("Federated = %+v: the hub copy is still federated", fed)
		}
		stale := project.DeepCopy()
		stale.Status = st
		later := metav1.NewTime(now.Add(time.Minute))
		if diff := cmp.Diff(st, MirrorStatus(stale, hubCopy, federatedCondition("ns-1"), reach, later)); diff != "" {
			t.Errorf("a stale status churned (-first +second):\n%s", diff)
		}
		back := MirrorStatus(stale, hubCopy, federatedCondition("ns-1"), Reachability{}, later)
		if diff := cmp.Diff(got, back); diff != "" {
			t.Errorf("heard from again, the status is not the hub's (-want +got):\n%s", diff)
		}
	})
}
