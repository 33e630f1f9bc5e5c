package cmdutil

import (
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestOnlyAFailedTestOperationIsAChange(t *testing.T) {
	workload := schema.GroupKind{Group: "compute.datumapis.com", Kind: "Workload"}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"a failed test operation": {&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
			Reason: metav1.StatusReasonInvalid, Message: "testing value /metadata/generation failed: test failed"}}, true},
		"a field admission refused, whose message says test": {apierrors.NewInvalid(workload, "web", field.ErrorList{
			field.Invalid(field.NewPath("spec", "template"), "ghcr.io/acme/test:1", "image ghcr.io/acme/test:1 is not allowed")}), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := isTestFailure(tc.err); got != tc.want {
				t.Errorf("isTestFailure(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
