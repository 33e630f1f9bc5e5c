package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/workloadstatus"
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

// written is the Workload's cities as observed after reconcileDeployments
// wrote them.
type written struct {
	cities []workloadstatus.City
	// leaving are the Workload's deployments of cities no longer in its
	// placements (deleted by this pass or earlier, not gone yet).
	leaving []*computev1alpha.WorkloadDeployment
}

// reconcileDeployments creates, updates and deletes the WorkloadDeployments
// of s.workload to match its targets (its expansion, with the revision the
// rollout across cities gives each city), and returns every city as
// observed after the writes. Every write is attempted, all at once (each
// names its own deployment, so none depends on another, and a Workload's
// cities start together instead of one round trip after the other); the
// errors are joined.
func reconcileDeployments(ctx context.Context, s *scope, targets []placement.Target) (written, error) {
	w := s.workload
	plan := placement.Diff(w, targets, s.deployments)

	current := make(map[string]*computev1alpha.WorkloadDeployment, len(s.deployments))
	for i := range s.deployments {
		current[s.deployments[i].Name] = &s.deployments[i]
	}

	// The patches' bases, read before any write goroutine changes current.
	before := make(map[string]*computev1alpha.WorkloadDeployment, len(plan.Update))
	for _, wd := range plan.Update {
		before[wd.Name] = current[wd.Name]
	}

	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		errs   []error
		failed = map[string]bool{}
	)
	// write runs do in its own goroutine; on success it records wd (nil:
	// removes name) as the current deployment and emits the event.
	write := func(name string, do func() error, wd *computev1alpha.WorkloadDeployment, action string, onFail *computev1alpha.WorkloadDeployment, event func()) {
		wg.Go(func() {
			err := do()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, s.failed(onFail, action, err))
				failed[name] = true
				return
			}
			if wd == nil {
				delete(current, name)
			} else {
				current[name] = wd
			}
			event()
		})
	}
	for _, wd := range plan.Create {
		write(wd.Name, func() error { return s.client.Create(ctx, wd) }, wd, "Create", wd, func() {
			s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentCreated, "Create",
				"Created WorkloadDeployment %s for placement %s in %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode)
		})
	}
	for _, wd := range plan.Update {
		base := before[wd.Name]
		// The rollout's bookkeeping (revision annotations, labels) is
		// written without an event: the event is for a new spec.
		newSpec := base == nil || !equality.Semantic.DeepEqual(base.Spec, wd.Spec)
		write(wd.Name, func() error { return s.client.Patch(ctx, wd, client.MergeFrom(base)) }, wd, "Update", wd, func() {
			if newSpec {
				s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentUpdated, "Update",
					"Updated WorkloadDeployment %s for placement %s in %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode)
			}
		})
	}
	for _, wd := range plan.Delete {
		write(wd.Name, func() error {
			err := s.client.Delete(ctx, wd, client.Preconditions{UID: &wd.UID})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}, nil, "Delete", wd, func() {
			s.recorder.Eventf(w, wd, corev1.EventTypeNormal, EventDeploymentDeleted, "Delete",
				"Deleted WorkloadDeployment %s of placement %s in %s: %s", wd.Name, wd.Spec.PlacementName, wd.Spec.CityCode,
				deletionCause(plan, wd))
		})
	}
	wg.Wait()
	return observed(s, plan, current, failed), errors.Join(errs...)
}

// observed pairs each planned target with the deployment that holds its
// name after the writes (failed: the names whose write did not land), and
// lists the Workload's deployments that no target wants.
func observed(s *scope, plan placement.Plan, current map[string]*computev1alpha.WorkloadDeployment, failed map[string]bool) written {
	out := written{cities: make([]workloadstatus.City, 0, len(plan.Targets))}
	targeted := make(map[string]bool, len(plan.Targets))
	for _, t := range plan.Targets {
		targeted[t.Name] = true
		c := workloadstatus.City{Target: t.Target, Unsynced: failed[t.Name]}
		if t.Reason != computev1alpha.ReasonDeploymentConflict {
			c.Deployment = current[t.Name]
		}
		out.cities = append(out.cities, c)
	}
	for i := range s.deployments {
		wd := &s.deployments[i]
		if !targeted[wd.Name] && placement.BelongsTo(wd, s.workload.UID) &&
			wd.Labels[computev1alpha.WorkloadUIDLabel] == string(s.workload.UID) {
			out.leaving = append(out.leaving, wd)
		}
	}
	return out
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
