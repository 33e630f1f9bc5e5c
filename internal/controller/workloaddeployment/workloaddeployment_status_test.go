package workloaddeployment

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
	"github.com/citycells/compute/internal/names"
)

var now = metav1.NewTime(time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC))

// wdBuilder builds WorkloadDeployments.
type wdBuilder struct {
	wd *computev1alpha.WorkloadDeployment
}

func makeWD(replicas int32) *wdBuilder {
	return &wdBuilder{wd: &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "wd-uid", Generation: 3},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:   computev1alpha.WorkloadReference{Name: "web", UID: "w-uid"},
			PlacementName: "default",
			CityCode:      "DFW",
			Template: computev1alpha.InstanceTemplateSpec{
				Metadata: computev1alpha.TemplateMetadata{
					Labels:      map[string]string{"app": "web", computev1alpha.CityCodeLabel: "LHR"},
					Annotations: map[string]string{"note": "x"},
				},
				Spec: computev1alpha.InstanceSpec{Runtime: computev1alpha.InstanceRuntimeSpec{
					Resources: computev1alpha.InstanceRuntimeResources{InstanceType: "datumcloud/d1-standard-2"},
				}},
			},
			ScaleSettings: computev1alpha.HorizontalScaleSettings{MinReplicas: 1},
			Replicas:      ptr.To(replicas),
		},
	}}
}

func (b *wdBuilder) build() *computev1alpha.WorkloadDeployment { return b.wd }

func (b *wdBuilder) hash() string { return names.TemplateHash(&b.wd.Spec.Template) }

// instBuilder builds Instances of the test deployment.
type instBuilder struct{ i computev1alpha.Instance }

// makeInst returns an Instance in slot k created from hash, with no status.
func makeInst(k int, hash string) *instBuilder {
	return &instBuilder{i: computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "web-" + strconv.Itoa(k),
			Labels: map[string]string{computev1alpha.InstanceIndexLabel: strconv.Itoa(k)},
		},
		Spec: computev1alpha.InstanceSpec{Controller: &computev1alpha.InstanceController{TemplateHash: hash}},
	}}
}

func (b *instBuilder) cond(t string, s metav1.ConditionStatus, reason, msg string) *instBuilder {
	b.i.Status.Conditions = append(b.i.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg})
	return b
}

// running marks the instance ready, programmed and observed at its hash.
func (b *instBuilder) running() *instBuilder {
	b.i.Status.Controller = &computev1alpha.InstanceControllerStatus{ObservedTemplateHash: b.i.Spec.Controller.TemplateHash}
	return b.cond(computev1alpha.ConditionProgrammed, metav1.ConditionTrue, "Programmed", "").
		cond(computev1alpha.ConditionReady, metav1.ConditionTrue, computev1alpha.ReasonAvailable, "")
}

// policyNotEnforced marks the instance ready and programmed but for its
// network policy, which its cell does not enforce.
func (b *instBuilder) policyNotEnforced() *instBuilder {
	b.i.Status.Controller = &computev1alpha.InstanceControllerStatus{ObservedTemplateHash: b.i.Spec.Controller.TemplateHash}
	return b.cond(computev1alpha.ConditionProgrammed, metav1.ConditionFalse, computev1alpha.ReasonNetworkPolicyNotEnforced, "not enforced").
		cond(computev1alpha.ConditionReady, metav1.ConditionTrue, computev1alpha.ReasonAvailable, "")
}

func (b *instBuilder) failing(reason, msg string) *instBuilder {
	b.i.Status.Controller = &computev1alpha.InstanceControllerStatus{ObservedTemplateHash: b.i.Spec.Controller.TemplateHash}
	return b.cond(computev1alpha.ConditionReady, metav1.ConditionFalse, reason, msg)
}

func (b *instBuilder) gated(gates ...string) *instBuilder {
	for _, g := range gates {
		b.i.Spec.Controller.SchedulingGates = append(b.i.Spec.Controller.SchedulingGates, computev1alpha.SchedulingGate{Name: g})
	}
	return b
}

func (b *instBuilder) deleting() *instBuilder {
	b.i.DeletionTimestamp = &now
	return b
}

func (b *instBuilder) noController() *instBuilder {
	b.i.Spec.Controller = nil
	return b
}

// statusOf computes the status of wd over insts the way Reconcile does.
func statusOf(wd *computev1alpha.WorkloadDeployment, insts ...*instBuilder) computev1alpha.WorkloadDeploymentStatus {
	items := make([]computev1alpha.Instance, 0, len(insts))
	for _, b := range insts {
		items = append(items, b.i)
	}
	s := newScope(wd, items, desiredReplicas(wd))
	return computeStatus(wd, s.instances, instanceplan.Assess(s.input), now)
}

// TestInstancesCreatedBeforeSHA256AreUpToDate: Instances a release before
// SHA-256 created carry the earlier spelling of their template's hash, in
// spec and status; they count as updated, the plan replaces none of them,
// and the cache's objects they share stay as they were.
func TestInstancesCreatedBeforeSHA256AreUpToDate(t *testing.T) {
	wd := makeWD(2).build()
	h := names.HashesOf(&wd.Spec.Template)
	old := []*instBuilder{makeInst(0, h.Legacy()).running(), makeInst(1, h.Legacy()).running()}
	for _, b := range old {
		b.i.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionReady, Status: metav1.ConditionTrue}}
	}
	cached := []*computev1alpha.InstanceController{old[0].i.Spec.Controller, old[1].i.Spec.Controller}

	st := statusOf(wd, old...)
	if st.UpdatedReplicas != 2 || st.TemplateHash != h.Current {
		t.Fatalf("counts %+v, hash %q: want 2 updated at %q", st.ReplicaCounts, st.TemplateHash, h.Current)
	}
	s := newScope(wd, []computev1alpha.Instance{old[0].i, old[1].i}, 2)
	for _, in := range instanceplan.Compute(s.input).Intents {
		if in.Action == instanceplan.ActionDelete || in.Action == instanceplan.ActionCreate {
			t.Fatalf("the plan replaces an Instance of an unchanged template: %+v", in)
		}
	}
	for i, c := range cached {
		if c.TemplateHash != h.Legacy() {
			t.Fatalf("Instance %d: the shared controller settings were changed to %q", i, c.TemplateHash)
		}
	}
	changed := makeWD(2).build()
	changed.Spec.Template.Metadata.Annotations["note"] = "y"
	other := makeInst(0, names.HashesOf(&changed.Spec.Template).Legacy()).running()
	if st := statusOf(wd, other); st.UpdatedReplicas != 0 {
		t.Fatalf("an Instance of another template's old hash counted as updated: %+v", st.ReplicaCounts)
	}
}

// summary is the part of a condition the tests compare.
type summary struct {
	Status          metav1.ConditionStatus
	Reason, Message string
}

func summarizeCondition(st computev1alpha.WorkloadDeploymentStatus, t string) summary {
	for _, c := range st.Conditions {
		if c.Type == t {
			return summary{c.Status, c.Reason, c.Message}
		}
	}
	return summary{}
}

func TestComputeStatusCounts(t *testing.T) {
	b := makeWD(3)
	h := b.hash()
	tests := map[string]struct {
		insts []*instBuilder
		want  computev1alpha.ReplicaCounts
	}{
		"running instances count everywhere": {
			insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running()},
			want:  computev1alpha.ReplicaCounts{Replicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, DesiredReplicas: 3},
		},
		"an instance the provider has not seen is not updated": {
			insts: []*instBuilder{makeInst(0, h)},
			want:  computev1alpha.ReplicaCounts{Replicas: 1, DesiredReplicas: 3},
		},
		"an old template is neither updated nor current, but may be ready": {
			insts: []*instBuilder{makeInst(0, "old").running()},
			want:  computev1alpha.ReplicaCounts{Replicas: 1, ReadyReplicas: 1, DesiredReplicas: 3},
		},
		"updated but not programmed is not current": {
			insts: []*instBuilder{makeInst(0, h).failing(computev1alpha.ReasonConfigurationError, "no")},
			want:  computev1alpha.ReplicaCounts{Replicas: 1, UpdatedReplicas: 1, DesiredReplicas: 3},
		},
		"an instance whose network policy the cell does not enforce is current: it runs, and the rollout is not held back": {
			insts: []*instBuilder{makeInst(0, h).policyNotEnforced()},
			want:  computev1alpha.ReplicaCounts{Replicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, DesiredReplicas: 3},
		},
		"terminating instances do not count": {
			insts: []*instBuilder{makeInst(0, h).running().deleting()},
			want:  computev1alpha.ReplicaCounts{DesiredReplicas: 3},
		},
		"an instance without controller fields does not panic": {
			insts: []*instBuilder{makeInst(0, h).noController()},
			want:  computev1alpha.ReplicaCounts{Replicas: 1, DesiredReplicas: 3},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, statusOf(b.build(), tc.insts...).ReplicaCounts); diff != "" {
				t.Errorf("counts mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeStatusConditions(t *testing.T) {
	b := makeWD(2)
	h := b.hash()
	tests := map[string]struct {
		wd        *computev1alpha.WorkloadDeployment
		insts     []*instBuilder
		condition string
		want      summary
	}{
		"Available is True when any replica is ready": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).failing(computev1alpha.ReasonInstanceCrashing, "boom")},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonReplicasAvailable, "1 of 2 replicas ready"},
		},
		"Available carries the worst reason with the first instance's message": {
			wd: b.build(), insts: []*instBuilder{
				makeInst(0, h).failing(computev1alpha.ReasonInstanceCrashing, "boom"),
				makeInst(1, h).failing(computev1alpha.ReasonImageUnavailable, "no such image"),
			},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable, "instance web-1: no such image"},
		},
		"Available counts the instances sharing the worst reason": {
			wd: b.build(), insts: []*instBuilder{
				makeInst(0, h).failing(computev1alpha.ReasonQuotaExceeded, "at limit"),
				makeInst(1, h).failing(computev1alpha.ReasonQuotaExceeded, "at limit"),
			},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonQuotaExceeded, "2 instances report QuotaExceeded; instance web-0: at limit"},
		},
		"an instance without a Ready condition is provisioning": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h)},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonProvisioning, "instance web-0: the instance has not reported readiness yet"},
		},
		"instances waiting for referenced data report the verdict, a source not found over a wait": {
			wd: b.build(), insts: []*instBuilder{
				makeInst(0, h).failing(computev1alpha.ReasonAwaitingPropagation, "waiting for 1 referenced object to reach this cell: Secret/db"),
				makeInst(1, h).failing(computev1alpha.ReasonSourceNotFound, "Secret db does not exist"),
			},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonSourceNotFound, "instance web-1: Secret db does not exist"},
		},
		"an instance waiting for referenced data reports AwaitingPropagation like one waiting for quota": {
			wd: b.build(), insts: []*instBuilder{
				makeInst(0, h).failing(computev1alpha.ReasonAwaitingPropagation, "waiting for 1 referenced object to reach this cell: Secret/db"),
				makeInst(1, h).failing(computev1alpha.ReasonAwaitingPropagation, "waiting for 1 referenced object to reach this cell: Secret/db"),
			},
			condition: computev1alpha.ConditionAvailable,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonAwaitingPropagation,
				"2 instances report AwaitingPropagation; instance web-0: waiting for 1 referenced object to reach this cell: Secret/db"},
		},
		"an instance the ReferencedData gate holds before its first report waits for its data": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).gated(computev1alpha.ReferencedDataSchedulingGate)},
			condition: computev1alpha.ConditionAvailable,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonAwaitingPropagation,
				"instance web-0: the instance waits for its referenced ConfigMaps and Secrets to reach the cell"},
		},
		"a source not found in a new template is where a rollout halts": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).failing(computev1alpha.ReasonSourceNotFound, "Secret db does not exist")},
			condition: computev1alpha.ConditionReplicasReady,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonSourceNotFound,
				"1 of 2 replicas ready, 2 up to date; instance web-1: Secret db does not exist"},
		},
		"a terminating instance reports Terminating": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, "old").running().deleting()},
			condition: computev1alpha.ConditionAvailable,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonTerminating, "instance web-0: the instance is being deleted"},
		},
		"Available without instances says none exist yet": {
			wd: b.build(), condition: computev1alpha.ConditionAvailable,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonNoReplicasReady, "0 of 2 replicas ready; no instance exists yet"},
		},
		"Available at zero replicas says so": {
			wd: makeWD(0).build(), condition: computev1alpha.ConditionAvailable,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonNoReplicasDesired, "the deployment is scaled to zero replicas"},
		},
		"Progressing reports a scale up": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running()},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonScalingUp, "1 of 2 replicas created"},
		},
		"Progressing reports a scale down": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running(), makeInst(2, h).running()},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonScalingDown, "removing 1 instance(s) beyond the 2 desired replicas"},
		},
		"Progressing reports a rollout before anything else": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, "old").running()},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonRollingUpdate, "1 of 2 replicas run an old template and will be replaced"},
		},
		"Progressing reports replaced instances still terminating": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running().deleting()},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonRollingUpdate, "waiting for 1 replaced instance(s) to terminate"},
		},
		"Progressing is False once every replica runs the current template": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running()},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonRolloutComplete, "all 2 replicas exist with the current template"},
		},
		"Progressing stays True while a replica held by quota has not started the template": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "over quota")},
			condition: computev1alpha.ConditionProgressing,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonReplicasNotReady, "1 of 2 replicas run the current template; the others have not started it yet"},
		},
		"ReplicasReady is True when every replica is ready and up to date": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).running()},
			condition: computev1alpha.ConditionReplicasReady,
			want:      summary{metav1.ConditionTrue, computev1alpha.ReasonAllReplicasReady, "2 of 2 replicas ready, 2 up to date"},
		},
		"ReplicasReady is False while a ready replica runs an old template": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, "old").running()},
			condition: computev1alpha.ConditionReplicasReady,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady, "2 of 2 replicas ready, 1 up to date"},
		},
		"ReplicasReady names a failing replica of the current template while an old one still serves": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, "old").running(), makeInst(1, h).failing(computev1alpha.ReasonImageUnavailable, "no such image")},
			condition: computev1alpha.ConditionReplicasReady,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonImageUnavailable,
				"1 of 2 replicas ready, 1 up to date; instance web-1: no such image"},
		},
		"ReplicasReady takes the worst failure of the current template": {
			wd: b.build(), insts: []*instBuilder{
				makeInst(0, h).failing(computev1alpha.ReasonInstanceCrashing, "boom"),
				makeInst(1, h).failing(computev1alpha.ReasonConfigurationError, "bad config"),
			},
			condition: computev1alpha.ConditionReplicasReady,
			want: summary{metav1.ConditionFalse, computev1alpha.ReasonConfigurationError,
				"0 of 2 replicas ready, 2 up to date; instance web-1: bad config"},
		},
		"ReplicasReady ignores an old template's failure: a fix rolling out is not blamed for it": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, "old").failing(computev1alpha.ReasonInstanceCrashing, "boom")},
			condition: computev1alpha.ConditionReplicasReady,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady, "1 of 2 replicas ready, 1 up to date"},
		},
		"ReplicasReady does not call a wait a failure": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, "old").running(), makeInst(1, h).cond(computev1alpha.ConditionReady, metav1.ConditionFalse, computev1alpha.ReasonPendingQuota, "waiting")},
			condition: computev1alpha.ConditionReplicasReady,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady, "1 of 2 replicas ready, 0 up to date"},
		},
		"ReplicasReady ignores a failing replica being deleted": {
			wd: b.build(), insts: []*instBuilder{makeInst(0, h).running(), makeInst(1, h).failing(computev1alpha.ReasonImageUnavailable, "no").deleting()},
			condition: computev1alpha.ConditionReplicasReady,
			want:      summary{metav1.ConditionFalse, computev1alpha.ReasonReplicasNotReady, "1 of 2 replicas ready, 1 up to date"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarizeCondition(statusOf(tc.wd, tc.insts...), tc.condition)); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", tc.condition, diff)
			}
		})
	}
}

func TestComputeStatusIsStableWhenNothingChanged(t *testing.T) {
	b := makeWD(2)
	h := b.hash()
	insts := []*instBuilder{makeInst(0, h).running(), makeInst(1, h).failing(computev1alpha.ReasonInstanceCrashing, "boom")}
	wd := b.build()
	wd.Status = statusOf(wd, insts...)
	wd.Status.ObservedGeneration = wd.Generation

	later := statusOf(wd, insts...)
	later.ObservedGeneration = wd.Generation
	if diff := cmp.Diff(wd.Status, later); diff != "" {
		t.Errorf("recomputing an unchanged status changed it (-first +second):\n%s", diff)
	}
	for _, c := range later.Conditions {
		if c.ObservedGeneration != wd.Generation {
			t.Errorf("%s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, wd.Generation)
		}
	}
	if later.Selector != computev1alpha.WorkloadDeploymentUIDLabel+"=wd-uid" || later.TemplateHash != h {
		t.Errorf("selector %q and hash %q", later.Selector, later.TemplateHash)
	}
}

func TestDesiredReplicas(t *testing.T) {
	wd := makeWD(4).build()
	if got := desiredReplicas(wd); got != 4 {
		t.Errorf("spec.replicas 4 gives %d", got)
	}
	wd.Spec.Replicas = nil
	wd.Spec.ScaleSettings.MinReplicas = 2
	if got := desiredReplicas(wd); got != 2 {
		t.Errorf("minReplicas 2 without spec.replicas gives %d", got)
	}
}

func TestNewInstance(t *testing.T) {
	b := makeWD(1)
	r := &Reconciler{SchedulingGates: []string{computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate}}
	wd := b.build()
	s := &scope{wd: wd, input: instanceplan.Input{TemplateHash: b.hash()}}
	intent := instanceplan.Intent{Action: instanceplan.ActionCreate, Name: "web-0", Ordinal: 0, Labels: map[string]string{
		computev1alpha.CityCodeLabel: "DFW", computev1alpha.InstanceIndexLabel: "0",
	}}
	got := r.newInstance(s, intent)

	want := &computev1alpha.Instance{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "web-0",
			Namespace:   "ns",
			Labels:      map[string]string{"app": "web", computev1alpha.CityCodeLabel: "DFW", computev1alpha.InstanceIndexLabel: "0"},
			Annotations: map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "compute.datumapis.com/v1alpha", Kind: "WorkloadDeployment", Name: "web", UID: "wd-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: computev1alpha.InstanceSpec{
			Runtime: wd.Spec.Template.Spec.Runtime,
			Controller: &computev1alpha.InstanceController{
				TemplateHash:    b.hash(),
				SchedulingGates: []computev1alpha.SchedulingGate{{Name: "Quota"}, {Name: "Network"}},
			},
		},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("new Instance mismatch (-want +got):\n%s", diff)
	}
	if wd.Spec.Template.Spec.Controller != nil || wd.Spec.Template.Metadata.Labels[computev1alpha.InstanceIndexLabel] != "" {
		t.Error("building an Instance changed the deployment's template")
	}
}

func TestLinkingLabelsComeFromTheDeployment(t *testing.T) {
	want := map[string]string{
		computev1alpha.WorkloadUIDLabel:            "w-uid",
		computev1alpha.WorkloadNameLabel:           "web",
		computev1alpha.WorkloadDeploymentUIDLabel:  "wd-uid",
		computev1alpha.WorkloadDeploymentNameLabel: "web",
		computev1alpha.CityCodeLabel:               "DFW",
		computev1alpha.PlacementNameLabel:          "default",
	}
	if diff := cmp.Diff(want, linkingLabels(makeWD(1).build())); diff != "" {
		t.Errorf("linking labels mismatch (-want +got):\n%s", diff)
	}
}

func TestSchedulingGatesHoldATemplateThatReadsDataForItsCompanions(t *testing.T) {
	cell := []string{computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate}
	mountsSecret := func(tpl *computev1alpha.InstanceTemplateSpec) {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, computev1alpha.InstanceVolume{Name: "creds",
			Secret: &computev1alpha.SecretVolumeSource{SecretName: "db"}})
	}
	pullsWithASecret := func(tpl *computev1alpha.InstanceTemplateSpec) {
		tpl.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{ImagePullSecrets: []computev1alpha.LocalSecretReference{{Name: "registry"}}}
	}
	tests := map[string]struct {
		cell   []string
		change func(*computev1alpha.InstanceTemplateSpec)
		want   []string
	}{
		"a template without references gets the cell's gates only": {
			cell: cell, want: cell,
		},
		"a template that mounts a Secret gets ReferencedData after the cell's gates": {
			cell: cell, change: mountsSecret,
			want: []string{computev1alpha.QuotaSchedulingGate, computev1alpha.NetworkSchedulingGate, computev1alpha.ReferencedDataSchedulingGate},
		},
		"a cell without gates still holds a template that pulls with a Secret": {
			change: pullsWithASecret, want: []string{computev1alpha.ReferencedDataSchedulingGate},
		},
		"a cell without gates and a template without references gives none": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tpl := makeWD(1).build().Spec.Template.DeepCopy()
			if tc.change != nil {
				tc.change(tpl)
			}
			got := schedulingGates(tc.cell, tpl)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gates mismatch (-want +got):\n%s", diff)
			}
			if len(cell) != 2 {
				t.Error("schedulingGates changed the cell's gates")
			}
		})
	}
}
