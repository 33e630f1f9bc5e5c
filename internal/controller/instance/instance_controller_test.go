package instance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func TestReadyIsComputedForTheInstanceAsTheReconcileLeavesIt(t *testing.T) {
	grantedNow := quota(metav1.ConditionTrue, computev1alpha.ReasonQuotaAvailable, "")
	grantedNow.ObservedGeneration = 2
	pending := quota(metav1.ConditionUnknown, computev1alpha.ReasonPendingEvaluation, "")
	pending.ObservedGeneration = 2
	cases := map[string]struct {
		inst         *instBuilder
		quota        metav1.Condition
		networkReady bool
		wantGates    []string
		wantReason   string
	}{
		"a granted Instance whose Quota gate goes waits for the provider": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate), quota: grantedNow, networkReady: true,
			wantReason: computev1alpha.ReasonProvisioning,
		},
		"an Instance whose quota is pending keeps its gate": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate), quota: pending, networkReady: true,
			wantGates: []string{computev1alpha.QuotaSchedulingGate}, wantReason: computev1alpha.ReasonPendingQuota,
		},
		"a grant for an older generation releases nothing": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate), quota: granted, networkReady: true,
			wantGates: []string{computev1alpha.QuotaSchedulingGate}, wantReason: computev1alpha.ReasonPendingQuota,
		},
		"a granted Instance still waiting for its network waits for the network": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate), quota: grantedNow,
			wantGates: []string{computev1alpha.NetworkSchedulingGate}, wantReason: computev1alpha.ReasonPendingNetwork,
		},
		"an Instance whose network is ready but quota pending waits for quota": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate), quota: pending, networkReady: true,
			wantGates: []string{computev1alpha.QuotaSchedulingGate}, wantReason: computev1alpha.ReasonPendingQuota,
		},
		"an ungated Instance the provider runs is ready": {
			inst: makeInst().programmed().available(metav1.ConditionTrue, computev1alpha.ReasonAvailable, ""), quota: grantedNow, networkReady: true,
			wantReason: computev1alpha.ReasonAvailable,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := &tc.inst.i
			before := inst.DeepCopy()
			got := withoutReleasedGates(inst, tc.quota, tc.networkReady)
			if diff := cmp.Diff(before, inst); diff != "" {
				t.Fatalf("the Instance itself changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGates, gates(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gates left (-want +got):\n%s", diff)
			}
			if r := readyCondition(got, tc.quota).Reason; r != tc.wantReason {
				t.Errorf("Ready reason = %s, want %s", r, tc.wantReason)
			}
		})
	}
}
