package quota

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
)

var (
	claimsGR = schema.GroupResource{Group: quotav1alpha1.GroupVersion.Group, Resource: "resourceclaims"}
	target   = Target{Project: "p1", Namespace: "default"}
)

// callErr wraps err as the Client does at step op.
func callErr(op Op, err error) error {
	return &Error{Op: op, Target: target, Claim: "instance-web-0", Err: err}
}

func TestCondition(t *testing.T) {
	tests := map[string]struct {
		claim       *quotav1alpha1.ResourceClaim
		err         error
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"a granted claim admits the instance": {
			claim:      makeClaim().granted(metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable, "granted 1 compute.datumapis.com/instances").observed(1).build(),
			wantStatus: metav1.ConditionTrue, wantReason: computev1alpha.ReasonQuotaAvailable, wantMessage: "granted 1 compute.datumapis.com/instances",
		},
		"an exceeded claim says how much is left": {
			claim: makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonQuotaExceeded,
				"requested 1 compute.datumapis.com/instances, 0 of 10 available").observed(1).build(),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaExceeded, wantMessage: "0 of 10 available",
		},
		"an exceeded claim without a message is explained from its denied allocations": {
			claim: makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonQuotaExceeded, "").
				withDenied(computev1alpha.ResourceTypeVCPUs, "requested 1000 compute.datumapis.com/vcpus, 500 of 40000 available").build(),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaExceeded, wantMessage: "500 of 40000 available",
		},
		"a claim the quota system rejects as invalid fails validation": {
			claim:      makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonValidationFailed, "resource type x is not registered").observed(1).build(),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonValidationFailed, wantMessage: "x is not registered",
		},
		"a fresh claim nobody evaluated yet is pending evaluation": {
			claim:      makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonPendingEvaluation, "Awaiting capacity evaluation").build(),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonPendingEvaluation, wantMessage: "waiting for the quota system",
		},
		"an evaluated claim still pending means the project has no budget": {
			claim: makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonPendingEvaluation,
				"no active ResourceGrant gives this consumer any compute.datumapis.com/memory").observed(1).build(),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaNoBudget, wantMessage: "compute.datumapis.com/memory",
		},
		"a pending claim evaluated for an older generation is pending evaluation": {
			claim:      makeClaim().granted(metav1.ConditionFalse, quotav1alpha1.ResourceClaimReasonPendingEvaluation, "").observed(1).generation(2).build(),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonPendingEvaluation,
		},
		"a claim without a Granted condition is pending evaluation": {
			claim:      makeClaim().build(),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonPendingEvaluation,
		},
		"a claim being deleted is waited for, even if it was granted": {
			claim:      makeClaim().granted(metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable, "").deleting().build(),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonPendingEvaluation, wantMessage: "previous ResourceClaim",
		},
		"no claim and no error is pending evaluation": {
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonPendingEvaluation,
		},
		"a refused connection means the backend is unavailable": {
			err:        callErr(OpGet, &url.Error{Op: "Get", URL: "https://quota", Err: syscall.ECONNREFUSED}),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable, wantMessage: "cannot reach the quota plane of project \"p1\"",
		},
		"an untrusted certificate means the backend is unavailable": {
			err:        callErr(OpGet, &url.Error{Op: "Get", URL: "https://quota", Err: x509.UnknownAuthorityError{}}),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a timeout means the backend is unavailable": {
			err:        callErr(OpCreate, context.DeadlineExceeded),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a 401 means the backend is unavailable to this cell": {
			err:        callErr(OpGet, apierrors.NewUnauthorized("token expired")),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a 500 means the backend is unavailable": {
			err:        callErr(OpCreate, apierrors.NewInternalError(errors.New("etcd down"))),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a 503 means the backend is unavailable": {
			err:        callErr(OpGet, apierrors.NewServiceUnavailable("starting")),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a 429 means the backend is unavailable": {
			err:        callErr(OpGet, apierrors.NewTooManyRequests("slow down", 1)),
			wantStatus: metav1.ConditionUnknown, wantReason: computev1alpha.ReasonQuotaBackendUnavailable,
		},
		"a 403 means quota is misconfigured": {
			err:        callErr(OpGet, apierrors.NewForbidden(claimsGR, "instance-web-0", errors.New("cell cannot get resourceclaims"))),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaMisconfigured, wantMessage: "check the cell's quota credentials",
		},
		"a 422 means quota is misconfigured": {
			err: callErr(OpCreate, apierrors.NewInvalid(schema.GroupKind{Group: claimsGR.Group, Kind: "ResourceClaim"}, "instance-web-0",
				field.ErrorList{field.Invalid(field.NewPath("spec", "resourceRef"), "Instance", "not claimable")})),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaMisconfigured,
		},
		"a create into a missing namespace means the namespace is not found": {
			err:        callErr(OpCreate, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "default")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaNamespaceNotFound, wantMessage: "namespace \"default\" does not exist",
		},
		"a 404 for the project's control plane means the project is not found": {
			err:        callErr(OpGet, apierrors.NewNotFound(schema.GroupResource{Group: ProjectAPIGroup, Resource: "projects"}, "p1")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaProjectNotFound, wantMessage: "project \"p1\" has no quota control plane",
		},
		"a plain 404 on create means the project path does not exist": {
			err:        callErr(OpCreate, apierrors.NewGenericServerResponse(404, "POST", claimsGR, "", "", 0, true)),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaProjectNotFound,
		},
		"a project no configured plane reaches is not found": {
			err:        callErr(OpConnect, fmt.Errorf("%w: no quota plane is configured for project %q", ErrProjectNotFound, "p1")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaProjectNotFound,
		},
		"a namespace without project labels makes the project unresolvable": {
			err:        callErr(OpResolve, fmt.Errorf("%w: namespace %q has no label", ErrProjectUnresolvable, "ns-cell")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaProjectIDUnresolvable, wantMessage: "has no label",
		},
		"a claim made by another cell means quota is misconfigured": {
			err:        callErr(OpGet, fmt.Errorf("%w: made by cell %q", ErrForeignClaim, "cell-b")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaMisconfigured, wantMessage: "cell-b",
		},
		"an instance that cannot be sized fails validation": {
			err:        callErr(OpCreate, fmt.Errorf("%w: instance type %q is not in the catalog", ErrUnsizable, "acme/huge")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonValidationFailed, wantMessage: "acme/huge",
		},
		"an error wins over whatever claim was read": {
			claim:      makeClaim().granted(metav1.ConditionTrue, quotav1alpha1.ResourceClaimReasonQuotaAvailable, "").build(),
			err:        callErr(OpGet, fmt.Errorf("%w: made by cell %q", ErrForeignClaim, "cell-b")),
			wantStatus: metav1.ConditionFalse, wantReason: computev1alpha.ReasonQuotaMisconfigured,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Condition(tc.claim, tc.err)
			if got.Type != computev1alpha.ConditionQuotaGranted {
				t.Errorf("type = %q, want %q", got.Type, computev1alpha.ConditionQuotaGranted)
			}
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason {
				t.Errorf("got %s/%s, want %s/%s (message %q)", got.Status, got.Reason, tc.wantStatus, tc.wantReason, got.Message)
			}
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", got.Message, tc.wantMessage)
			}
			if got.Message == "" {
				t.Errorf("message is empty")
			}
		})
	}
}

func TestEveryReasonHasAStatus(t *testing.T) {
	blocks, err := apitest.Reasons()
	if err != nil {
		t.Fatal(err)
	}
	declared := blocks["QuotaGranted reasons."]
	if len(declared) == 0 {
		t.Fatalf("the API declares no QuotaGranted reasons; blocks found: %v", blocks)
	}
	for _, reason := range declared {
		if _, ok := statusOf[reason]; !ok {
			t.Errorf("QuotaGranted reason %s declared by the API has no status in statusOf", reason)
		}
	}
	for reason := range statusOf {
		if !slices.Contains(declared, reason) {
			t.Errorf("statusOf maps %s, which the API does not declare as a QuotaGranted reason", reason)
		}
	}
}

func TestIsFailure(t *testing.T) {
	tests := map[string]struct {
		reason string
		want   bool
	}{
		"an unreachable backend is a failure":     {reason: computev1alpha.ReasonQuotaBackendUnavailable, want: true},
		"a missing project is a failure":          {reason: computev1alpha.ReasonQuotaProjectNotFound, want: true},
		"a missing namespace is a failure":        {reason: computev1alpha.ReasonQuotaNamespaceNotFound, want: true},
		"a refused claim is a failure":            {reason: computev1alpha.ReasonQuotaMisconfigured, want: true},
		"an unresolvable project is a failure":    {reason: computev1alpha.ReasonQuotaProjectIDUnresolvable, want: true},
		"exceeded quota is an answer":             {reason: computev1alpha.ReasonQuotaExceeded},
		"no budget is an answer":                  {reason: computev1alpha.ReasonQuotaNoBudget},
		"a granted claim is an answer":            {reason: computev1alpha.ReasonQuotaAvailable},
		"a claim failing validation is an answer": {reason: computev1alpha.ReasonValidationFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsFailure(tc.reason); got != tc.want {
				t.Errorf("IsFailure(%s) = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}
