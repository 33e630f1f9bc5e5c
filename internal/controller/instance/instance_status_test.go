package instance

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// instBuilder builds Instances.
type instBuilder struct{ i computev1alpha.Instance }

func makeInst() *instBuilder {
	return &instBuilder{i: computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Generation: 2},
		Spec:       computev1alpha.InstanceSpec{Controller: &computev1alpha.InstanceController{TemplateHash: "h"}},
	}}
}

func (b *instBuilder) gated(names ...string) *instBuilder {
	for _, n := range names {
		b.i.Spec.Controller.SchedulingGates = append(b.i.Spec.Controller.SchedulingGates, computev1alpha.SchedulingGate{Name: n})
	}
	return b
}

func (b *instBuilder) cond(t string, s metav1.ConditionStatus, reason, msg string) *instBuilder {
	b.i.Status.Conditions = append(b.i.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: b.i.Generation})
	return b
}

func (b *instBuilder) programmed() *instBuilder {
	return b.cond(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, "Programmed", "placed")
}

func (b *instBuilder) available(s metav1.ConditionStatus, reason, msg string) *instBuilder {
	return b.cond(computev1alpha.ConditionAvailable, s, reason, msg)
}

func (b *instBuilder) deleting() *instBuilder {
	b.i.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	return b
}

func (b *instBuilder) noController() *instBuilder {
	b.i.Spec.Controller = nil
	return b
}

// quota returns a QuotaGranted condition.
func quota(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: computev1alpha.ConditionQuotaGranted, Status: s, Reason: reason, Message: msg}
}

var granted = quota(metav1.ConditionTrue, computev1alpha.ReasonQuotaDisabled, "")

func TestReadyCondition(t *testing.T) {
	type want struct {
		Status          metav1.ConditionStatus
		Reason, Message string
	}
	tests := map[string]struct {
		inst  *instBuilder
		quota metav1.Condition
		want  want
	}{
		"a deleting instance is terminating": {
			inst: makeInst().programmed().available(metav1.ConditionTrue, "Available", "").deleting(), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonTerminating, "the instance is being deleted"},
		},
		"the Quota gate waits for quota": {
			inst: makeInst().gated("Quota"), quota: quota(metav1.ConditionUnknown, computev1alpha.ReasonPendingEvaluation, "evaluating"),
			want: want{metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "waiting for quota to be granted"},
		},
		"the Quota gate reports a quota denial as it is": {
			inst: makeInst().gated("Quota", "Network"), quota: quota(metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "project p is at its limit of 10 instances"),
			want: want{metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "project p is at its limit of 10 instances"},
		},
		"the Quota gate reports an unreachable backend as it is": {
			inst: makeInst().gated("Quota"), quota: quota(metav1.ConditionUnknown, computev1alpha.ReasonQuotaBackendUnavailable, "dial tcp: refused"),
			want: want{metav1.ConditionFalse, computev1alpha.ReasonQuotaBackendUnavailable, "dial tcp: refused"},
		},
		"granted quota with the gate still present is about to be released": {
			inst: makeInst().gated("Quota"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "quota is granted; releasing the Quota scheduling gate"},
		},
		"the Network gate waits for the network": {
			inst: makeInst().gated("Network"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonPendingNetwork, "waiting for the instance's network to be ready"},
		},
		"other gates are listed sorted": {
			inst: makeInst().gated("Zeta", "Alpha"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonSchedulingGatesPresent, "waiting for scheduling gates: Alpha, Zeta"},
		},
		"an available instance is ready": {
			inst: makeInst().programmed().available(metav1.ConditionTrue, "Available", "running"), quota: granted,
			want: want{metav1.ConditionTrue, computev1alpha.ReasonAvailable, "the instance is available"},
		},
		"a provider sub-reason is passed on with its message": {
			inst: makeInst().programmed().available(metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable, "failed to pull image"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable, "failed to pull image"},
		},
		"the worst provider sub-reason wins": {
			inst: makeInst().cond(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, "rejected").
				available(metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "starting"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonConfigurationError, "rejected"},
		},
		"ready goes back to False when the instance stops being available": {
			inst: makeInst().programmed().available(metav1.ConditionFalse, computev1alpha.ReasonInstanceCrashing, "exited with code 1"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonInstanceCrashing, "exited with code 1"},
		},
		"an unknown provider reason is NotAvailable with what the provider said": {
			inst: makeInst().programmed().available(metav1.ConditionFalse, "Stopped", "stopped by the operator"), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonNotAvailable, "the runtime provider reports Available=False (Stopped): stopped by the operator"},
		},
		"the old Running condition is not read": {
			inst: makeInst().programmed().cond("Running", metav1.ConditionTrue, "Running", ""), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "the instance is programmed; waiting for it to become available"},
		},
		"an instance the provider has not touched is provisioning": {
			inst: makeInst(), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the runtime provider to start the instance"},
		},
		"an instance without controller fields does not panic": {
			inst: makeInst().noController(), quota: granted,
			want: want{metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "waiting for the runtime provider to start the instance"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := readyCondition(&tc.inst.i, admission{quota: tc.quota})
			if diff := cmp.Diff(tc.want, want{c.Status, c.Reason, c.Message}); diff != "" {
				t.Errorf("Ready mismatch (-want +got):\n%s", diff)
			}
			if c.Type != computev1alpha.ConditionReady || c.ObservedGeneration != tc.inst.i.Generation {
				t.Errorf("Ready has type %q and observedGeneration %d", c.Type, c.ObservedGeneration)
			}
		})
	}
}

func TestQuotaAdmits(t *testing.T) {
	tests := map[string]struct {
		inst *instBuilder
		want bool
	}{
		"True for the current generation admits": {
			inst: makeInst().cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionTrue, computev1alpha.ReasonQuotaDisabled, ""),
			want: true,
		},
		"True for an older generation does not admit": {
			inst: func() *instBuilder {
				b := makeInst().cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "")
				b.i.Generation = 3
				return b
			}(),
			want: false,
		},
		"a denial does not admit": {
			inst: makeInst().cond(computev1alpha.ConditionQuotaGranted, metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, ""),
			want: false,
		},
		"no condition does not admit": {
			inst: makeInst(),
			want: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var q metav1.Condition
			if c := meta.FindStatusCondition(tc.inst.i.Status.Conditions, computev1alpha.ConditionQuotaGranted); c != nil {
				q = *c
			}
			if got := quotaAdmits(&tc.inst.i, q); got != tc.want {
				t.Errorf("quotaAdmits = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	exceeded := quota(metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "2 instances left")
	readyExceeded := metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonQuotaExceeded, Message: "2 instances left"}
	pending := quota(metav1.ConditionUnknown, computev1alpha.ReasonPendingEvaluation, "evaluating")
	readyPending := metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonPendingQuota}
	readyCrashing := metav1.Condition{Type: computev1alpha.ConditionReady, Status: metav1.ConditionFalse, Reason: computev1alpha.ReasonInstanceCrashing, Message: "exit 1"}
	noBudget := quota(metav1.ConditionUnknown, computev1alpha.ReasonQuotaNoBudget, "no grant")
	unavailable := quota(metav1.ConditionUnknown, computev1alpha.ReasonQuotaBackendUnavailable, "refused")
	tests := map[string]struct {
		old, new []metav1.Condition
		want     []warning
	}{
		"a denial is reported once, not again through Ready": {
			old:  []metav1.Condition{pending, readyPending},
			new:  []metav1.Condition{exceeded, readyExceeded},
			want: []warning{{computev1alpha.ReasonQuotaExceeded, "2 instances left"}},
		},
		"an unchanged denial is not reported again": {
			old: []metav1.Condition{exceeded, readyExceeded},
			new: []metav1.Condition{exceeded, readyExceeded},
		},
		"a missing budget is reported": {
			old:  nil,
			new:  []metav1.Condition{noBudget, readyPending},
			want: []warning{{computev1alpha.ReasonQuotaNoBudget, "no grant"}},
		},
		"a backend failure after a denial is reported": {
			old:  []metav1.Condition{exceeded, readyExceeded},
			new:  []metav1.Condition{unavailable, readyPending},
			want: []warning{{computev1alpha.ReasonQuotaBackendUnavailable, "refused"}},
		},
		"waiting for quota is not a warning": {
			old: nil,
			new: []metav1.Condition{pending, readyPending},
		},
		"a grant is not a warning": {
			old: []metav1.Condition{exceeded, readyExceeded},
			new: []metav1.Condition{granted, readyPending},
		},
		"a provider failure is reported through Ready": {
			old:  []metav1.Condition{granted, readyPending},
			new:  []metav1.Condition{granted, readyCrashing},
			want: []warning{{computev1alpha.ReasonInstanceCrashing, "exit 1"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, warnings(tc.old, tc.new)); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNothingToReportYet(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now)}
	young := func(b *instBuilder) *instBuilder {
		b.i.CreationTimestamp = metav1.NewTime(now.Add(-500 * time.Millisecond))
		return b
	}
	pending := quota(metav1.ConditionUnknown, computev1alpha.ReasonPendingEvaluation, "")
	exceeded := quota(metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "over")
	tests := []struct {
		name  string
		inst  *instBuilder
		quota metav1.Condition
		want  time.Duration
	}{
		{"ungated, the provider has not reported", young(makeInst()), granted, 1500 * time.Millisecond},
		{"claim pending", young(makeInst().gated(computev1alpha.QuotaSchedulingGate)), pending, 1500 * time.Millisecond},
		{"granted while gated: the gate goes first, the grant is reported with the provider's report", young(makeInst().gated(computev1alpha.QuotaSchedulingGate)), granted, 1500 * time.Millisecond},
		{"granted while gated by Quota and Network", young(makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate)), granted, 0},
		{"refused: reported at once", young(makeInst().gated(computev1alpha.QuotaSchedulingGate)), exceeded, 0},
		{"the provider reported", young(makeInst().programmed()), granted, 0},
		{"held by the Network gate", young(makeInst().gated(computev1alpha.NetworkSchedulingGate)), granted, 0},
		{"Ready already reported", young(makeInst().cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "")), granted, 0},
		{"being deleted", young(makeInst().deleting()), granted, 0},
		{"past the grace", makeInst(), pending, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := &tt.inst.i
			if inst.CreationTimestamp.IsZero() {
				inst.CreationTimestamp = metav1.NewTime(now.Add(-InitialReportGrace))
			}
			q := tt.quota
			q.ObservedGeneration = inst.Generation
			if got := r.nothingToReportYet(inst, q, readyCondition(inst, admission{quota: q})); got != tt.want {
				t.Errorf("nothingToReportYet = %s, want %s", got, tt.want)
			}
		})
	}
}
