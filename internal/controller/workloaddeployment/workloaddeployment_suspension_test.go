package workloaddeployment

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

func (b *wdBuilder) suspended() *wdBuilder {
	metav1.SetMetaDataAnnotation(&b.wd.ObjectMeta, computev1alpha.SuspendedAnnotation, computev1alpha.SuspendedAnnotationValue)
	return b
}

// stopped marks the instance suspended and confirmed stopped.
func (b *instBuilder) stopped() *instBuilder {
	b.marked()
	b.i.Status.Suspended = true
	return b.cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonSuspended, "stopped")
}

// marked puts the suspension annotation on the instance.
func (b *instBuilder) marked() *instBuilder {
	metav1.SetMetaDataAnnotation(&b.i.ObjectMeta, computev1alpha.SuspendedAnnotation, computev1alpha.SuspendedAnnotationValue)
	return b
}

func TestSuspensionStatus(t *testing.T) {
	wd := makeWD(2)
	h := wd.hash()
	tests := map[string]struct {
		wd            *wdBuilder
		insts         []*instBuilder
		wantSuspended bool
		wantReason    string // of Available, ReplicasReady and Progressing
	}{
		"running": {
			wd: makeWD(2), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running()},
			wantReason: "",
		},
		"suspending: one instance still runs": {
			wd: makeWD(2).suspended(), insts: []*instBuilder{makeInst(0, h).stopped(), makeInst(1, h).marked().running()},
			wantReason: computev1alpha.ReasonSuspended,
		},
		"suspended: every instance stopped": {
			wd: makeWD(2).suspended(), insts: []*instBuilder{makeInst(0, h).stopped(), makeInst(1, h).stopped()},
			wantSuspended: true, wantReason: computev1alpha.ReasonSuspended,
		},
		"resumed: no longer suspended though the instances have not started yet": {
			wd: makeWD(2), insts: []*instBuilder{makeInst(0, h).stopped(), makeInst(1, h).stopped()},
			wantReason: "instances'",
		},
		"an instance being deleted does not hold the suspension": {
			wd: makeWD(1).suspended(), insts: []*instBuilder{makeInst(0, h).stopped(), makeInst(1, h).marked().running().deleting()},
			wantSuspended: true, wantReason: computev1alpha.ReasonSuspended,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := statusOf(tc.wd.build(), tc.insts...)
			if st.Suspended != tc.wantSuspended {
				t.Errorf("status.suspended = %v, want %v", st.Suspended, tc.wantSuspended)
			}
			if tc.wantReason == "instances'" {
				// Available and ReplicasReady pass on the Instances'
				// reasons, stale until the Instance controller sees them.
				return
			}
			for _, ct := range []string{computev1alpha.ConditionAvailable, computev1alpha.ConditionReplicasReady, computev1alpha.ConditionProgressing} {
				c := meta.FindStatusCondition(st.Conditions, ct)
				if c == nil {
					t.Fatalf("no %s condition", ct)
				}
				if suspendedReason := c.Reason == computev1alpha.ReasonSuspended; suspendedReason != (tc.wantReason == computev1alpha.ReasonSuspended) ||
					suspendedReason && c.Status != metav1.ConditionFalse {
					t.Errorf("%s = %s/%s (%s), want reason %q", ct, c.Status, c.Reason, c.Message, tc.wantReason)
				}
			}
		})
	}
}

func TestSuspensionPatches(t *testing.T) {
	h := makeWD(2).hash()
	insts := []computev1alpha.Instance{makeInst(0, h).marked().i, makeInst(1, h).i, makeInst(2, h).deleting().i}
	names := func(is []*computev1alpha.Instance) []string {
		var out []string
		for _, i := range is {
			out = append(out, i.Name)
		}
		return out
	}
	if got := names(suspensionPatches(true, insts)); len(got) != 1 || got[0] != "web-1" {
		t.Errorf("suspending marks %v, want [web-1]", got)
	}
	if got := names(suspensionPatches(false, insts)); len(got) != 1 || got[0] != "web-0" {
		t.Errorf("resuming unmarks %v, want [web-0]", got)
	}
}
