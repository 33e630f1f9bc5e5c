package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/placement"
)

// Event reasons.
const (
	// EventDeploymentCreated: a WorkloadDeployment was created for a city.
	EventDeploymentCreated = "DeploymentCreated"
	// EventDeploymentUpdated: a WorkloadDeployment got the Workload's new
	// spec.
	EventDeploymentUpdated = "DeploymentUpdated"
	// EventDeploymentDeleted: a WorkloadDeployment no longer wanted was
	// deleted.
	EventDeploymentDeleted = "DeploymentDeleted"
	// EventDeploymentFailed: a WorkloadDeployment could not be written.
	EventDeploymentFailed = "DeploymentFailed"
	// EventRevisionRecorded: the template was recorded as a new revision.
	EventRevisionRecorded = "RevisionRecorded"
	// EventRevisionFailed: the template could not be recorded.
	EventRevisionFailed = "RevisionFailed"
)

// reconcileDeployments creates, updates and deletes the WorkloadDeployments
// of s.workload to match its targets (its expansion, shaped by the rollout
// across cities), and returns every city as observed after the writes.
// Every write is attempted; the errors are joined.
func reconcileDeployments(ctx context.Context, s *scope, targets []placement.Target) ([]observedCity, error) {
	w := s.workload
	plan := placement.Diff(w, targets, s.deployments)

	current := make(map[string]*computev1alpha.WorkloadDeployment, len(s.deployments))
	for i := range s.deployments {
		current[s.deployments[i].Name] = &s.deployments[i]
	}

	var errs []error
	for _, wd := range plan.Create {
		if err := s.client.Create(ctx, wd); err != nil {
			errs = append(errs, s.failed(wd, "Create", err))
			continue
		}
		current[wd.Name] = wd
		s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentCreated, "Create",
			"Created WorkloadDeployment %s for placement %s in %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode)
	}
	for _, wd := range plan.Update {
		if err := s.client.Patch(ctx, wd, client.MergeFrom(current[wd.Name])); err != nil {
			errs = append(errs, s.failed(wd, "Update", err))
			continue
		}
		current[wd.Name] = wd
		s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentUpdated, "Update",
			"Updated WorkloadDeployment %s for placement %s in %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode)
	}
	for _, wd := range plan.Delete {
		err := s.client.Delete(ctx, wd, client.Preconditions{UID: &wd.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, s.failed(wd, "Delete", err))
			continue
		}
		delete(current, wd.Name)
		s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentDeleted, "Delete",
			"Deleted WorkloadDeployment %s of placement %s in %s: %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode,
			deletionCause(plan, wd))
	}
	return observedCities(plan, current), errors.Join(errs...)
}

// failed reports a failed write of wd: an event unless it is a conflict
// (a stale read that the retry resolves), and the error to return.
func (s *scope) failed(wd *computev1alpha.WorkloadDeployment, action string, err error) error {
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		s.recorder.Eventf(s.workload, wd, corev1.EventTypeWarning, EventDeploymentFailed, action,
			"Failed to %s WorkloadDeployment %s in %s: %s", strings.ToLower(action), wd.Name, wd.Spec.CityCode, apiMessage(err))
	}
	return fmt.Errorf("failed to %s WorkloadDeployment %s: %w", strings.ToLower(action), wd.Name, err)
}

// deletionCause says why a deployment is no longer wanted.
func deletionCause(plan placement.Plan, wd *computev1alpha.WorkloadDeployment) string {
	for _, t := range plan.Targets {
		if t.Name == wd.Name && t.Reason != "" {
			return t.Reason
		}
	}
	return "the city or placement was removed from the Workload"
}

// apiMessage returns the message of an API error without the request
// details.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
