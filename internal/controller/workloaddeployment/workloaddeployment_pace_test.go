package workloaddeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestStatusPace(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: computev1alpha.ConditionAvailable, Status: status, Reason: reason, Message: msg}
	}
	status := func(gen int64, ready int32, c metav1.Condition) *computev1alpha.WorkloadDeploymentStatus {
		return &computev1alpha.WorkloadDeploymentStatus{
			ObservedGeneration: gen, Conditions: []metav1.Condition{c},
			ReplicaCounts: computev1alpha.ReplicaCounts{Replicas: 10, UpdatedReplicas: 10, ReadyReplicas: ready, DesiredReplicas: 10},
		}
	}
	some := cond(metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "3 of 10 ready")
	now := time.Unix(1000, 0)
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	tests := []struct {
		name     string
		old, new *computev1alpha.WorkloadDeploymentStatus
		since    time.Duration
		want     time.Duration
	}{
		{"progress soon after a write is held", status(1, 3, some), status(1, 4, cond(metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "4 of 10 ready")), 100 * time.Millisecond, 150 * time.Millisecond},
		{"progress after the interval is written", status(1, 3, some), status(1, 4, some), StatusInterval, 0},
		{"reaching the desired state is written at once", status(1, 9, some), status(1, 10, some), 0, 0},
		{"a condition's reason changing is written at once", status(1, 3, some), status(1, 3, cond(metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable, "")), 0, 0},
		{"a new generation is written at once", status(1, 3, some), status(2, 3, some), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pace
			p.wrote(key, now.Add(-tt.since))
			if got := p.hold(key, tt.old, tt.new, now); got != tt.want {
				t.Errorf("hold = %s, want %s", got, tt.want)
			}
		})
	}
	var p pace
	if got := p.hold(key, status(1, 3, some), status(1, 4, some), now); got != 0 {
		t.Errorf("the first write is held %s", got)
	}
	p.wrote(key, now)
	p.forget(key)
	if got := p.hold(key, status(1, 3, some), status(1, 4, some), now); got != 0 {
		t.Errorf("a forgotten deployment's write is held %s", got)
	}
}
