package instance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

// Verdicts on an Instance's referenced data.
var (
	dataReady    = referenceddata.Verdict{Ready: true, Reason: computev1alpha.ReasonReferencedDataReady, Message: "all 2 referenced objects present in the cell"}
	dataAwaiting = referenceddata.Verdict{Reason: computev1alpha.ReasonAwaitingPropagation, Message: "waiting for 1 referenced object to reach this cell: Secret/db", Waiting: []string{"Secret/db"}}
	dataNotFound = referenceddata.Verdict{Reason: computev1alpha.ReasonSourceNotFound, Message: "Secret db does not exist in namespace p"}
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
		data         *referenceddata.Verdict
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
		"an Instance whose referenced data is in the cell loses its ReferencedData gate and waits for the provider": {
			inst: makeInst().gated(computev1alpha.ReferencedDataSchedulingGate), quota: grantedNow, networkReady: true, data: &dataReady,
			wantReason: computev1alpha.ReasonProvisioning,
		},
		"an Instance waiting for a companion keeps its gate and says what it waits for": {
			inst: makeInst().gated(computev1alpha.ReferencedDataSchedulingGate), quota: grantedNow, networkReady: true, data: &dataAwaiting,
			wantGates: []string{computev1alpha.ReferencedDataSchedulingGate}, wantReason: computev1alpha.ReasonAwaitingPropagation,
		},
		"a source not found is reported over pending quota": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.ReferencedDataSchedulingGate), quota: pending, networkReady: true, data: &dataNotFound,
			wantGates:  []string{computev1alpha.QuotaSchedulingGate, computev1alpha.ReferencedDataSchedulingGate},
			wantReason: computev1alpha.ReasonSourceNotFound,
		},
		"pending quota is reported over data on its way": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.ReferencedDataSchedulingGate), quota: pending, networkReady: true, data: &dataAwaiting,
			wantGates:  []string{computev1alpha.QuotaSchedulingGate, computev1alpha.ReferencedDataSchedulingGate},
			wantReason: computev1alpha.ReasonPendingQuota,
		},
		"data in the cell while quota is pending releases the ReferencedData gate only": {
			inst: makeInst().gated(computev1alpha.QuotaSchedulingGate, computev1alpha.ReferencedDataSchedulingGate), quota: pending, networkReady: true, data: &dataReady,
			wantGates: []string{computev1alpha.QuotaSchedulingGate}, wantReason: computev1alpha.ReasonPendingQuota,
		},
		"an Instance whose referenced data was not decided keeps its gate": {
			inst: makeInst().gated(computev1alpha.ReferencedDataSchedulingGate), quota: grantedNow, networkReady: true,
			wantGates: []string{computev1alpha.ReferencedDataSchedulingGate}, wantReason: computev1alpha.ReasonAwaitingPropagation,
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
			a := admission{quota: tc.quota, networkReady: tc.networkReady, data: tc.data}
			got := withoutReleasedGates(inst, a)
			if diff := cmp.Diff(before, inst); diff != "" {
				t.Fatalf("the Instance itself changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGates, gates(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gates left (-want +got):\n%s", diff)
			}
			if r := readyCondition(got, a).Reason; r != tc.wantReason {
				t.Errorf("Ready reason = %s, want %s", r, tc.wantReason)
			}
		})
	}
}

func TestReferencedDataReadyIsTheVerdictWhileTheGateHoldsAndKeptAfter(t *testing.T) {
	cases := map[string]struct {
		inst   *instBuilder
		data   *referenceddata.Verdict
		want   metav1.Condition
		wantOK bool
	}{
		"a verdict that waits is False with its reason and what it waits for": {
			inst: makeInst().gated(computev1alpha.ReferencedDataSchedulingGate), data: &dataAwaiting, wantOK: true,
			want: metav1.Condition{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionFalse,
				Reason: computev1alpha.ReasonAwaitingPropagation, Message: dataAwaiting.Message, ObservedGeneration: 2},
		},
		"a verdict that is ready is True": {
			inst: makeInst().gated(computev1alpha.ReferencedDataSchedulingGate), data: &dataReady, wantOK: true,
			want: metav1.Condition{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionTrue,
				Reason: computev1alpha.ReasonReferencedDataReady, Message: dataReady.Message, ObservedGeneration: 2},
		},
		"after the gate went, the condition the Instance has is kept as it is": {
			inst: makeInst().cond(computev1alpha.ConditionReferencedDataReady, metav1.ConditionTrue, computev1alpha.ReasonReferencedDataReady, "present"), wantOK: true,
			want: metav1.Condition{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionTrue,
				Reason: computev1alpha.ReasonReferencedDataReady, Message: "present"},
		},
		"an Instance that never waited for data has none": {
			inst: makeInst(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := referencedDataCondition(&tc.inst.i, tc.data)
			if ok != tc.wantOK {
				t.Fatalf("ok = %t, want %t", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "ObservedGeneration")); diff != "" {
				t.Errorf("ReferencedDataReady mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
