package instancetype

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

var (
	t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

type itBuilder struct{ it computev1alpha.InstanceType }

func makeType(name string) *itBuilder {
	return &itBuilder{it: computev1alpha.InstanceType{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: computev1alpha.InstanceTypeSpec{
			Resources: computev1alpha.InstanceTypeResources{CPU: resource.MustParse("1"), Memory: resource.MustParse("2Gi")},
			Lifecycle: computev1alpha.InstanceTypeLifecycle{Phase: computev1alpha.InstanceTypePhaseActive},
		},
	}}
}

func (b *itBuilder) phase(p computev1alpha.InstanceTypeLifecyclePhase, replacement string) *itBuilder {
	b.it.Spec.Lifecycle = computev1alpha.InstanceTypeLifecycle{Phase: p, ReplacementInstanceType: replacement}
	return b
}

func (b *itBuilder) generation(g int64) *itBuilder { b.it.Generation = g; return b }

func (b *itBuilder) deprecatedAt(at time.Time) *itBuilder {
	t := metav1.NewTime(at)
	b.it.Status.DeprecatedAt = &t
	return b
}

func (b *itBuilder) ready(status metav1.ConditionStatus, reason string, gen int64, at time.Time) *itBuilder {
	b.it.Status.Conditions = append(b.it.Status.Conditions, metav1.Condition{
		Type: computev1alpha.InstanceTypeConditionReady, Status: status, Reason: reason,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(at),
	})
	return b
}

func (b *itBuilder) build() *computev1alpha.InstanceType { return b.it.DeepCopy() }

func TestComputeStatus(t *testing.T) {
	type want struct {
		deprecatedAt *time.Time
		status       metav1.ConditionStatus
		reason       string
		generation   int64
		transition   time.Time
	}
	ptr := func(t time.Time) *time.Time { return &t }
	tests := map[string]struct {
		it          *computev1alpha.InstanceType
		replacement *computev1alpha.InstanceType
		want        want
	}{
		"an Active type without replacement is Ready": {
			it:   makeType("a").build(),
			want: want{status: metav1.ConditionTrue, reason: computev1alpha.InstanceTypeReasonValid, generation: 1, transition: t1},
		},
		"a newly Deprecated type records when it was deprecated": {
			it:          makeType("a").phase(computev1alpha.InstanceTypePhaseDeprecated, "b").generation(2).ready(metav1.ConditionTrue, computev1alpha.InstanceTypeReasonValid, 1, t0).build(),
			replacement: makeType("b").build(),
			want:        want{deprecatedAt: ptr(t1), status: metav1.ConditionTrue, reason: computev1alpha.InstanceTypeReasonValid, generation: 2, transition: t0},
		},
		"a recorded deprecation time is kept": {
			it:          makeType("a").phase(computev1alpha.InstanceTypePhaseDeprecated, "b").deprecatedAt(t0).build(),
			replacement: makeType("b").build(),
			want:        want{deprecatedAt: ptr(t0), status: metav1.ConditionTrue, reason: computev1alpha.InstanceTypeReasonValid, generation: 1, transition: t1},
		},
		"a Disabled type is not Ready and keeps its deprecation time": {
			it:          makeType("a").phase(computev1alpha.InstanceTypePhaseDisabled, "b").generation(3).deprecatedAt(t0).ready(metav1.ConditionTrue, computev1alpha.InstanceTypeReasonValid, 2, t0).build(),
			replacement: makeType("b").build(),
			want:        want{deprecatedAt: ptr(t0), status: metav1.ConditionFalse, reason: computev1alpha.InstanceTypeReasonDisabled, generation: 3, transition: t1},
		},
		"a Disabled type never seen Deprecated gets no invented deprecation time": {
			it:          makeType("a").phase(computev1alpha.InstanceTypePhaseDisabled, "b").build(),
			replacement: makeType("b").build(),
			want:        want{status: metav1.ConditionFalse, reason: computev1alpha.InstanceTypeReasonDisabled, generation: 1, transition: t1},
		},
		"a missing replacement makes the type not Ready": {
			it:   makeType("a").phase(computev1alpha.InstanceTypePhaseDeprecated, "gone").deprecatedAt(t0).build(),
			want: want{deprecatedAt: ptr(t0), status: metav1.ConditionFalse, reason: computev1alpha.InstanceTypeReasonReplacementNotFound, generation: 1, transition: t1},
		},
		"a Disabled replacement makes the type not Ready": {
			it:          makeType("a").phase(computev1alpha.InstanceTypePhaseDeprecated, "b").deprecatedAt(t0).build(),
			replacement: makeType("b").phase(computev1alpha.InstanceTypePhaseDisabled, "c").build(),
			want:        want{deprecatedAt: ptr(t0), status: metav1.ConditionFalse, reason: computev1alpha.InstanceTypeReasonReplacementDisabled, generation: 1, transition: t1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.it.DeepCopy()
			st := computeStatus(observation{it: tc.it, replacement: tc.replacement}, t1)
			if diff := cmp.Diff(before, tc.it); diff != "" {
				t.Errorf("computeStatus changed its input (-before +after):\n%s", diff)
			}
			var gotAt *time.Time
			if st.DeprecatedAt != nil {
				gotAt = &st.DeprecatedAt.Time
			}
			if diff := cmp.Diff(tc.want.deprecatedAt, gotAt, cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("deprecatedAt (-want +got):\n%s", diff)
			}
			if len(st.Conditions) != 1 {
				t.Fatalf("conditions = %v, want one Ready condition", st.Conditions)
			}
			c := st.Conditions[0]
			got := want{deprecatedAt: tc.want.deprecatedAt, status: c.Status, reason: c.Reason, generation: c.ObservedGeneration, transition: c.LastTransitionTime.Time}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("Ready condition (-want +got):\n%s", diff)
			}
			if c.Message == "" {
				t.Errorf("Ready condition has no message")
			}
		})
	}
}

// TestComputeStatusIsStable: a status computed once computes to itself, so
// the controller writes nothing on the next pass.
func TestComputeStatusIsStable(t *testing.T) {
	it := makeType("a").phase(computev1alpha.InstanceTypePhaseDeprecated, "b").build()
	o := observation{it: it, replacement: makeType("b").build()}
	it.Status = computeStatus(o, t0)
	if diff := cmp.Diff(it.Status, computeStatus(o, t1)); diff != "" {
		t.Errorf("second pass changed the status (-first +second):\n%s", diff)
	}
}
