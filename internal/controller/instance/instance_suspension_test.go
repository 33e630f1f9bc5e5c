package instance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func (b *instBuilder) suspended() *instBuilder {
	metav1.SetMetaDataAnnotation(&b.i.ObjectMeta, computev1alpha.SuspendedAnnotation, computev1alpha.SuspendedAnnotationValue)
	return b
}

func TestSuspension(t *testing.T) {
	providerStopped := func(b *instBuilder) *instBuilder {
		return b.available(metav1.ConditionFalse, computev1alpha.ReasonSuspended, "the pod is gone")
	}
	tests := map[string]struct {
		inst          *instBuilder
		wantSuspended bool
		wantReason    string
	}{
		"a running instance is not suspended": {
			inst:       makeInst().programmed().available(metav1.ConditionTrue, "Available", ""),
			wantReason: computev1alpha.ReasonAvailable,
		},
		"suspended, the provider still runs it": {
			inst:       makeInst().suspended().programmed().available(metav1.ConditionTrue, "Available", ""),
			wantReason: computev1alpha.ReasonSuspended,
		},
		"suspended and stopped by the provider": {
			inst:          providerStopped(makeInst().suspended()),
			wantSuspended: true,
			wantReason:    computev1alpha.ReasonSuspended,
		},
		"suspended before it ever started (gated)": {
			inst:          makeInst().suspended().gated(computev1alpha.QuotaSchedulingGate),
			wantSuspended: true,
			wantReason:    computev1alpha.ReasonSuspended,
		},
		"resumed, the provider has not started it yet": {
			inst:       providerStopped(makeInst()),
			wantReason: computev1alpha.ReasonNotAvailable,
		},
		"deleting while suspended": {
			inst:       providerStopped(makeInst().suspended()).deleting(),
			wantReason: computev1alpha.ReasonTerminating,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inst := &tc.inst.i
			if got := suspendedStatus(inst); got != tc.wantSuspended {
				t.Errorf("status.suspended = %v, want %v", got, tc.wantSuspended)
			}
			if got := readyCondition(inst, admission{quota: granted}); got.Reason != tc.wantReason || (got.Status == metav1.ConditionTrue) != (tc.wantReason == computev1alpha.ReasonAvailable) {
				t.Errorf("Ready = %s/%s (%s), want reason %s", got.Status, got.Reason, got.Message, tc.wantReason)
			}
		})
	}
}
