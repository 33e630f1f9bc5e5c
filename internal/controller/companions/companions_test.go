package companions

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

func TestTheConditionSaysWhatWasResolved(t *testing.T) {
	ok := condition(outcome{expected: referenceddata.Expected{Resolved: true, Tokens: []string{"ConfigMap/app", "Secret/db"}}})
	if ok.Status != metav1.ConditionTrue || ok.Reason != "Ready" || ok.Message != "2 referenced objects copied to the federation plane: ConfigMap/app, Secret/db" {
		t.Errorf("resolved: %+v", ok)
	}
	bad := condition(outcome{err: "SourceNotFound: Secret db does not exist in namespace n: create it"})
	if bad.Status != metav1.ConditionFalse || bad.Reason != "SourceNotFound" || bad.Message != "Secret db does not exist in namespace n: create it" {
		t.Errorf("not found: %+v", bad)
	}
	if r, m := referenceddata.SplitError("no reason here"); r != computev1alpha.ReasonResolving || m != "no reason here" {
		t.Errorf("SplitError without a reason = %q, %q", r, m)
	}
}

func TestOnlyDeploymentsThatReferenceDataConcernTheResolver(t *testing.T) {
	plain := &computev1alpha.WorkloadDeployment{}
	plain.Spec.Template.Spec.Runtime.Sandbox = &computev1alpha.SandboxRuntime{Containers: []computev1alpha.SandboxContainer{{Name: "a"}}}
	if concerned(plain) {
		t.Error("a template without references concerns the resolver: every deployment would cost it work")
	}
	refs := plain.DeepCopy()
	refs.Spec.Template.Spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "reg"}}
	if !concerned(refs) {
		t.Error("a pull secret does not concern the resolver")
	}
	earlier := plain.DeepCopy()
	earlier.Annotations = map[string]string{computev1alpha.ExpectedReferencedDataAnnotation: `["Secret/reg"]`}
	if !concerned(earlier) {
		t.Error("a deployment whose references went is not cleaned up")
	}
}

func TestAStatusWriteOfAnotherWriterComesBackOnlyWhenItDropsTheCondition(t *testing.T) {
	wd := &computev1alpha.WorkloadDeployment{}
	wd.Status.Conditions = []metav1.Condition{{Type: computev1alpha.ConditionReferencedDataReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	counts := wd.DeepCopy()
	counts.Status.ReadyReplicas = 3
	if deploymentChanged.Update(event.UpdateEvent{ObjectOld: wd, ObjectNew: counts}) {
		t.Error("a status write that keeps the condition is reconciled")
	}
	dropped := counts.DeepCopy()
	dropped.Status.Conditions = nil
	if !deploymentChanged.Update(event.UpdateEvent{ObjectOld: counts, ObjectNew: dropped}) {
		t.Error("a status write that dropped the condition is not reconciled")
	}
}

func TestACompanionIsRewrittenOnlyWhenItsContentChanges(t *testing.T) {
	mk := func(hash string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret.db",
			Labels:      map[string]string{computev1alpha.ReferencedDataLabel: "true"},
			Annotations: map[string]string{computev1alpha.ReferencedDataHashAnnotation: hash, computev1alpha.ReferencedDataSourceAnnotation: "Secret/db"}}}
	}
	if !sameCompanion(mk("a"), mk("a")) || sameCompanion(mk("a"), mk("b")) {
		t.Error("sameCompanion does not follow the content hash")
	}
}
