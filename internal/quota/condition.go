package quota

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// Errors the Client wraps; Condition maps each to its QuotaGranted reason.
var (
	// ErrProjectUnresolvable means the Instance's cell namespace does not
	// say which project (or which project namespace) it belongs to, or
	// cannot be read.
	ErrProjectUnresolvable = errors.New("the project of the instance cannot be resolved")
	// ErrProjectNotFound means the project has no quota plane.
	ErrProjectNotFound = errors.New("the project has no quota plane")
	// ErrForeignClaim means the claim name is taken by a claim another cell
	// (or another cell namespace) made.
	ErrForeignClaim = errors.New("the claim belongs to another cell")
	// ErrClaimOrphaned is returned by Release when the claim cannot be
	// released because the project cannot be resolved; the caller lets the
	// Instance go anyway.
	ErrClaimOrphaned = errors.New("the quota claim is orphaned")
)

// Op names the step of a quota call that failed.
type Op string

// Steps of a quota call.
const (
	// OpResolve reads the Instance's cell namespace to find its project.
	OpResolve Op = "resolve"
	// OpConnect builds the client of the project's quota plane.
	OpConnect Op = "connect"
	// OpGet reads the claim.
	OpGet Op = "get"
	// OpCreate creates the claim.
	OpCreate Op = "create"
	// OpDelete deletes the claim.
	OpDelete Op = "delete"
)

// Error is a failed quota call with the step and target it failed at.
type Error struct {
	// Op is the step that failed.
	Op Op
	// Target is the project and namespace, as far as they were resolved.
	Target Target
	// Claim is the claim's name.
	Claim string
	// Err is the cause.
	Err error
}

// Error describes the failure.
func (e *Error) Error() string {
	return fmt.Sprintf("failed to %s ResourceClaim %s in %s: %v", e.Op, e.Claim, e.Target, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error {
	return e.Err
}

// statusOf is the QuotaGranted status each reason carries: True only when
// the Instance may run, Unknown while the answer may still come without
// anyone acting, False when it was refused or someone must fix something.
var statusOf = map[string]metav1.ConditionStatus{
	computev1alpha.ReasonQuotaAvailable:             metav1.ConditionTrue,
	computev1alpha.ReasonQuotaDisabled:              metav1.ConditionTrue,
	computev1alpha.ReasonPendingEvaluation:          metav1.ConditionUnknown,
	computev1alpha.ReasonQuotaNoBudget:              metav1.ConditionUnknown,
	computev1alpha.ReasonQuotaBackendUnavailable:    metav1.ConditionUnknown,
	computev1alpha.ReasonQuotaExceeded:              metav1.ConditionFalse,
	computev1alpha.ReasonValidationFailed:           metav1.ConditionFalse,
	computev1alpha.ReasonQuotaProjectNotFound:       metav1.ConditionFalse,
	computev1alpha.ReasonQuotaNamespaceNotFound:     metav1.ConditionFalse,
	computev1alpha.ReasonQuotaMisconfigured:         metav1.ConditionFalse,
	computev1alpha.ReasonQuotaProjectIDUnresolvable: metav1.ConditionFalse,
}

// IsFailure reports whether a QuotaGranted reason means the quota backend
// could not be asked (as opposed to an answer, granted or not). Failures are
// what compute_quota_eval_failures_total counts.
func IsFailure(reason string) bool {
	switch reason {
	case computev1alpha.ReasonQuotaBackendUnavailable, computev1alpha.ReasonQuotaProjectNotFound,
		computev1alpha.ReasonQuotaNamespaceNotFound, computev1alpha.ReasonQuotaMisconfigured,
		computev1alpha.ReasonQuotaProjectIDUnresolvable:
		return true
	}
	return false
}

// Condition maps what a quota call observed onto the QuotaGranted condition
// (type, status, reason, message; the caller sets observedGeneration): err
// when the call failed, otherwise the claim's Granted condition. It is pure.
func Condition(claim *quotav1alpha1.ResourceClaim, err error) metav1.Condition {
	var reason, msg string
	switch {
	case err != nil:
		reason, msg = Reason(err), errorMessage(err)
	case claim == nil:
		reason, msg = computev1alpha.ReasonPendingEvaluation, "the quota claim has not been created yet"
	default:
		reason, msg = claimReason(claim)
	}
	return metav1.Condition{
		Type:    computev1alpha.ConditionQuotaGranted,
		Status:  statusOf[reason],
		Reason:  reason,
		Message: status.Truncate(msg),
	}
}

// claimReason maps a claim's Granted condition to a reason and message.
func claimReason(claim *quotav1alpha1.ResourceClaim) (string, string) {
	ref := claim.Namespace + "/" + claim.Name
	if claim.DeletionTimestamp != nil {
		return computev1alpha.ReasonPendingEvaluation,
			fmt.Sprintf("waiting for the previous ResourceClaim %s to be released", ref)
	}
	c := meta.FindStatusCondition(claim.Status.Conditions, quotav1alpha1.ResourceClaimConditionGranted)
	if c == nil {
		return computev1alpha.ReasonPendingEvaluation, fmt.Sprintf("waiting for the quota system to evaluate ResourceClaim %s", ref)
	}
	switch {
	case c.Status == metav1.ConditionTrue:
		return computev1alpha.ReasonQuotaAvailable, withDetail("quota granted", c.Message)
	case c.Reason == quotav1alpha1.ResourceClaimReasonQuotaExceeded:
		return computev1alpha.ReasonQuotaExceeded, withDetail("quota exceeded", exceededDetail(claim, c.Message))
	case c.Reason == quotav1alpha1.ResourceClaimReasonValidationFailed:
		return computev1alpha.ReasonValidationFailed, withDetail(fmt.Sprintf("the quota system rejected ResourceClaim %s", ref), c.Message)
	case c.Reason == quotav1alpha1.ResourceClaimReasonPendingEvaluation && evaluated(claim):
		// Evaluated and still pending: no grant gives the project this
		// resource type, so waiting alone will not help.
		return computev1alpha.ReasonQuotaNoBudget, withDetail("the project has no quota budget for this instance", c.Message)
	default:
		return computev1alpha.ReasonPendingEvaluation, fmt.Sprintf("waiting for the quota system to evaluate ResourceClaim %s", ref)
	}
}

// evaluated reports whether the quota system has looked at the claim's
// current generation: a fresh claim reads as pending by default, with no
// observedGeneration.
func evaluated(claim *quotav1alpha1.ResourceClaim) bool {
	return claim.Status.ObservedGeneration > 0 && claim.Status.ObservedGeneration == claim.Generation
}

// exceededDetail returns the claim's denial message, or one built from the
// denied allocations when the condition has none.
func exceededDetail(claim *quotav1alpha1.ResourceClaim, msg string) string {
	if msg != "" {
		return msg
	}
	var parts []string
	for _, a := range claim.Status.Allocations {
		if a.Status == quotav1alpha1.AllocationDenied && a.Message != "" {
			parts = append(parts, a.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// withDetail joins a summary and the quota system's own words.
func withDetail(summary, detail string) string {
	if detail == "" {
		return summary
	}
	return summary + ": " + detail
}

// Reason classifies a failed quota call into a QuotaGranted reason. Unknown
// errors count as an unreachable backend: quota fails closed.
func Reason(err error) string {
	var qe *Error
	op := Op("")
	if errors.As(err, &qe) {
		op = qe.Op
	}
	switch {
	case errors.Is(err, ErrProjectUnresolvable), errors.Is(err, ErrClaimOrphaned):
		return computev1alpha.ReasonQuotaProjectIDUnresolvable
	case errors.Is(err, ErrProjectNotFound):
		return computev1alpha.ReasonQuotaProjectNotFound
	case errors.Is(err, ErrForeignClaim):
		return computev1alpha.ReasonQuotaMisconfigured
	case errors.Is(err, ErrUnsizable):
		return computev1alpha.ReasonValidationFailed
	case errors.Is(err, context.Canceled):
		return computev1alpha.ReasonPendingEvaluation
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		// Network, TLS, DNS, timeouts: the backend did not answer.
		return computev1alpha.ReasonQuotaBackendUnavailable
	}
	s := st.Status()
	switch {
	case s.Code == http.StatusNotFound || s.Reason == metav1.StatusReasonNotFound:
		return notFoundReason(s, op)
	case s.Code == http.StatusForbidden, s.Code == http.StatusUnprocessableEntity, s.Code == http.StatusBadRequest:
		return computev1alpha.ReasonQuotaMisconfigured
	default:
		// 401 (expired or wrong credentials), 409 leftovers, 429, 5xx.
		return computev1alpha.ReasonQuotaBackendUnavailable
	}
}

// notFoundReason tells a missing namespace from a missing project: the
// apiserver names the namespace in the details of a create into a missing
// namespace; any other 404 means the path itself (the project's control
// plane, or the quota API in it) does not exist. A 404 for the claim itself
// never reaches here: the Client treats it as "no claim yet".
func notFoundReason(s metav1.Status, op Op) string {
	if s.Details != nil && s.Details.Kind == "namespaces" && s.Details.Group == "" {
		return computev1alpha.ReasonQuotaNamespaceNotFound
	}
	if op == OpCreate && strings.Contains(s.Message, "namespaces \"") {
		return computev1alpha.ReasonQuotaNamespaceNotFound
	}
	return computev1alpha.ReasonQuotaProjectNotFound
}

// errorMessage says what failed and what to do about it.
func errorMessage(err error) string {
	var qe *Error
	target, claim := Target{}, ""
	if errors.As(err, &qe) {
		target, claim = qe.Target, qe.Claim
	}
	cause := rootMessage(err)
	switch Reason(err) {
	case computev1alpha.ReasonQuotaProjectIDUnresolvable:
		return cause
	case computev1alpha.ReasonQuotaProjectNotFound:
		return fmt.Sprintf("project %q has no quota control plane: %s; check that the project exists", target.Project, cause)
	case computev1alpha.ReasonQuotaNamespaceNotFound:
		return fmt.Sprintf("namespace %q does not exist in the quota plane of project %q; create it or fix the %s label of the cell namespace",
			target.Namespace, target.Project, computev1alpha.UpstreamNamespaceLabel)
	case computev1alpha.ReasonQuotaMisconfigured:
		if errors.Is(err, ErrForeignClaim) {
			return cause
		}
		return fmt.Sprintf("the quota plane of project %q refused ResourceClaim %s: %s; check the cell's quota credentials and the compute ResourceRegistrations",
			target.Project, claim, cause)
	case computev1alpha.ReasonValidationFailed:
		return fmt.Sprintf("the quota claim cannot be built: %s", cause)
	case computev1alpha.ReasonPendingEvaluation:
		return "the quota evaluation was interrupted"
	default:
		return fmt.Sprintf("cannot reach the quota plane of project %q: %s; the instance stays gated until it answers", target.Project, cause)
	}
}

// rootMessage is the error text without the Error wrapper's prefix.
func rootMessage(err error) string {
	var qe *Error
	if errors.As(err, &qe) && qe.Err != nil {
		return qe.Err.Error()
	}
	return err.Error()
}
