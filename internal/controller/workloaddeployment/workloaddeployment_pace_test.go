package workloaddeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// statusBuilder builds WorkloadDeployment statuses of two desired
// replicas for the pace's tests.
type statusBuilder struct {
	s computev1alpha.WorkloadDeploymentStatus
}

// makeStatus returns the status of generation 1 just after its two
// Instances were created: none ready, none updated.
func makeStatus() *statusBuilder {
	return &statusBuilder{s: computev1alpha.WorkloadDeploymentStatus{
		ObservedGeneration: 1,
		TemplateHash:       "abc",
		ReplicaCounts:      computev1alpha.ReplicaCounts{Replicas: 2, DesiredReplicas: 2},
		Conditions: []metav1.Condition{
			{Type: computev1alpha.ConditionAvailable, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonProvisioning, Message: "2 instances report Provisioning"},
			{Type: computev1alpha.ConditionProgressing, Status: metav1.ConditionTrue, Reason: computev1alpha.ReasonReplicasNotReady},
			{Type: computev1alpha.ConditionReplicasReady, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonReplicasNotReady},
		},
	}}
}

func (b *statusBuilder) generation(g int64) *statusBuilder {
	b.s.ObservedGeneration = g
	return b
}

// counts sets the updated, current and ready counts.
func (b *statusBuilder) counts(updated, current, ready int32) *statusBuilder {
	b.s.UpdatedReplicas, b.s.CurrentReplicas, b.s.ReadyReplicas = updated, current, ready
	return b
}

func (b *statusBuilder) replicas(n int32) *statusBuilder {
	b.s.Replicas = n
	return b
}

func (b *statusBuilder) desired(n int32) *statusBuilder {
	b.s.DesiredReplicas = n
	return b
}

// condition sets a condition's status, reason and message.
func (b *statusBuilder) condition(t string, status metav1.ConditionStatus, reason, msg string) *statusBuilder {
	for i := range b.s.Conditions {
		if b.s.Conditions[i].Type == t {
			b.s.Conditions[i].Status, b.s.Conditions[i].Reason, b.s.Conditions[i].Message = status, reason, msg
			return b
		}
	}
	b.s.Conditions = append(b.s.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg})
	return b
}

func (b *statusBuilder) withoutConditions() *statusBuilder {
	b.s.Conditions = nil
	return b
}

func (b *statusBuilder) build() *computev1alpha.WorkloadDeploymentStatus {
	return &b.s
}

// ready returns the status of two replicas all ready.
func ready() *statusBuilder {
	return makeStatus().counts(2, 2, 2).
		condition(computev1alpha.ConditionAvailable, metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "2 of 2 replicas ready").
		condition(computev1alpha.ConditionProgressing, metav1.ConditionFalse, computev1alpha.ReasonRolloutComplete, "").
		condition(computev1alpha.ConditionReplicasReady, metav1.ConditionTrue, computev1alpha.ReasonAllReplicasReady, "")
}

func TestUrgent(t *testing.T) {
	const (
		available   = computev1alpha.ConditionAvailable
		progressing = computev1alpha.ConditionProgressing
		f           = metav1.ConditionFalse
		tr          = metav1.ConditionTrue
	)
	tests := map[string]struct {
		old, new *statusBuilder
		want     bool
	}{
		// Progress: held.
		"a count changing is progress": {
			makeStatus(), makeStatus().counts(1, 0, 0), false,
		},
		"a message changing is progress": {
			makeStatus(), makeStatus().condition(available, f, computev1alpha.ReasonProvisioning, "instance web-0: booting"), false,
		},
		"the Instances appearing after the first write is progress": {
			makeStatus().replicas(0).condition(available, f, computev1alpha.ReasonNoReplicasReady, "").condition(progressing, tr, computev1alpha.ReasonScalingUp, ""),
			makeStatus(), false,
		},
		"waiting for quota is progress": {
			makeStatus(), makeStatus().condition(available, f, computev1alpha.ReasonPendingQuota, ""), false,
		},
		"every replica running the current template is progress": {
			makeStatus(), makeStatus().counts(2, 0, 0).condition(progressing, f, computev1alpha.ReasonRolloutComplete, ""), false,
		},
		"the first ready replica is progress": {
			makeStatus().counts(2, 2, 0),
			makeStatus().counts(2, 2, 1).condition(available, tr, computev1alpha.ReasonReplicasAvailable, "1 of 2 replicas ready"), false,
		},
		"a failing reason's message changing is progress": {
			makeStatus().condition(available, f, computev1alpha.ReasonQuotaExceeded, "1 instance reports QuotaExceeded"),
			makeStatus().condition(available, f, computev1alpha.ReasonQuotaExceeded, "2 instances report QuotaExceeded"), false,
		},
		// Urgent: written at once.
		"a new generation is urgent": {
			makeStatus(), makeStatus().generation(2), true,
		},
		"a new deployment's first status, coming up, is progress": {
			makeStatus().withoutConditions().generation(0).counts(0, 0, 0), makeStatus(), false,
		},
		"a new deployment's first status at its desired state is urgent": {
			makeStatus().withoutConditions().generation(0).counts(0, 0, 0), ready(), true,
		},
		"a new deployment's first status with a failure is urgent": {
			makeStatus().withoutConditions().generation(0).counts(0, 0, 0),
			makeStatus().condition(available, f, computev1alpha.ReasonQuotaExceeded, ""), true,
		},
		"a new desired count is urgent": {
			makeStatus(), makeStatus().desired(3), true,
		},
		"reaching the desired state is urgent": {
			makeStatus().counts(2, 2, 1).condition(available, tr, computev1alpha.ReasonReplicasAvailable, ""), ready(), true,
		},
		"leaving the desired state is urgent": {
			ready(), ready().counts(2, 2, 1), true,
		},
		"every replica ready before the last is programmed is urgent": {
			makeStatus().counts(2, 1, 1),
			makeStatus().counts(2, 1, 2).condition(computev1alpha.ConditionReplicasReady, tr, computev1alpha.ReasonAllReplicasReady, ""), true,
		},
		"losing availability is urgent": {
			makeStatus().counts(2, 2, 1).condition(available, tr, computev1alpha.ReasonReplicasAvailable, ""),
			makeStatus().counts(2, 2, 0).condition(available, f, computev1alpha.ReasonInstanceCrashing, ""), true,
		},
		"a failure appearing is urgent": {
			makeStatus().condition(available, f, computev1alpha.ReasonPendingQuota, ""),
			makeStatus().condition(available, f, computev1alpha.ReasonQuotaExceeded, ""), true,
		},
		"a failure changing is urgent": {
			makeStatus().condition(available, f, computev1alpha.ReasonImageUnavailable, ""),
			makeStatus().condition(available, f, computev1alpha.ReasonInstanceCrashing, ""), true,
		},
		"a new template's failure on ReplicasReady while old replicas serve is urgent": {
			makeStatus().counts(1, 1, 1).condition(available, tr, computev1alpha.ReasonReplicasAvailable, ""),
			makeStatus().counts(1, 1, 1).condition(available, tr, computev1alpha.ReasonReplicasAvailable, "").
				condition(computev1alpha.ConditionReplicasReady, f, computev1alpha.ReasonImageUnavailable, ""), true,
		},
		"a failure clearing is urgent": {
			makeStatus().condition(available, f, computev1alpha.ReasonQuotaExceeded, ""),
			makeStatus().condition(available, f, computev1alpha.ReasonProvisioning, ""), true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := urgent(tt.old.build(), tt.new.build()); got != tt.want {
				t.Errorf("urgent = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestPaceHoldsProgressForOneIntervalFromTheFirstChange(t *testing.T) {
	var p pace
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	start := time.Unix(1000, 0)
	old := makeStatus().build()
	progress := makeStatus().counts(1, 0, 0).build()
	more := makeStatus().counts(2, 0, 0).build()

	if got := p.hold(key, old, progress, start); got != StatusInterval {
		t.Fatalf("the first progress change is held %s, want %s", got, StatusInterval)
	}
	// A later change joins the interval the first one started.
	if got := p.hold(key, old, more, start.Add(300*time.Millisecond)); got != StatusInterval-300*time.Millisecond {
		t.Errorf("a later change is held %s, want the rest of the interval", got)
	}
	if got := p.hold(key, old, more, start.Add(StatusInterval)); got != 0 {
		t.Errorf("a change whose interval is up is held %s", got)
	}
	// An urgent change is never held, whatever is pending.
	if got := p.hold(key, old, ready().build(), start.Add(time.Millisecond)); got != 0 {
		t.Errorf("an urgent change is held %s", got)
	}
	// Once written (or undone), the next progress starts an interval of
	// its own.
	p.settled(key)
	later := start.Add(time.Hour)
	if got := p.hold(key, old, progress, later); got != StatusInterval {
		t.Errorf("progress after a write is held %s, want %s", got, StatusInterval)
	}
	p.forget(key)
	if got := p.hold(key, old, progress, later.Add(StatusInterval/2)); got != StatusInterval {
		t.Errorf("progress of a forgotten deployment is held %s, want a new interval", got)
	}
	// Deployments are held apart.
	other := types.NamespacedName{Namespace: "ns", Name: "api"}
	if got := p.hold(other, old, progress, later.Add(StatusInterval)); got != StatusInterval {
		t.Errorf("another deployment's progress is held %s, want an interval of its own", got)
	}
}
