package writeback

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestGatedHold(t *testing.T) {
	created := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	gated := func(gates ...string) *computev1alpha.Instance {
		inst := &computev1alpha.Instance{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
		if len(gates) == 0 {
			return inst // no controller settings at all
		}
		inst.Spec.Controller = &computev1alpha.InstanceController{}
		for _, g := range gates {
			inst.Spec.Controller.SchedulingGates = append(inst.Spec.Controller.SchedulingGates, computev1alpha.SchedulingGate{Name: g})
		}
		return inst
	}
	deleting := gated(computev1alpha.QuotaSchedulingGate)
	deleting.DeletionTimestamp = &metav1.Time{Time: created}
	tests := map[string]struct {
		inst *computev1alpha.Instance
		age  time.Duration
		want time.Duration
	}{
		"a new gated Instance is held for the rest of the hold": {gated(computev1alpha.QuotaSchedulingGate), 500 * time.Millisecond, GatedCopyHold - 500*time.Millisecond},
		"an ungated Instance is written at once":                {gated(), 0, 0},
		"a gated Instance past the hold is written as it is":    {gated(computev1alpha.QuotaSchedulingGate), GatedCopyHold, 0},
		"an Instance being deleted is not held":                 {deleting, 0, 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := gatedHold(tt.inst, created.Add(tt.age)); got != tt.want {
				t.Errorf("gatedHold = %s, want %s", got, tt.want)
			}
		})
	}
}
