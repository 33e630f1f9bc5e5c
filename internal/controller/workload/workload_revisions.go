package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/revision"
)

// reconcileRevisions records the Workload's template as the current
// revision and trims the history. It returns the current revision, nil when
// it could not be recorded.
func (r *Reconciler) reconcileRevisions(ctx context.Context, s *scope) (*revision.Current, error) {
	w := s.workload
	now := time.Now()
	if r.Clock != nil {
		now = r.Clock.Now()
	}
	plan, err := revision.Compute(w, s.revisions, now)
	if err != nil {
		return nil, err
	}
	switch {
	case plan.Create != nil:
		if err := s.client.Create(ctx, plan.Create); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				s.recorder.Eventf(w, nil, corev1.EventTypeWarning, EventRevisionFailed, "Create",
					"Failed to record revision %d: %s", plan.Current.Number, apiMessage(err))
			}
			return nil, fmt.Errorf("failed to create ControllerRevision %s: %w", plan.Create.Name, err)
		}
		s.recorder.Eventf(w, plan.Create, corev1.EventTypeNormal, EventRevisionRecorded, "Create",
			"Recorded revision %d (template hash %s)", plan.Current.Number, plan.Current.TemplateHash)
	case plan.Renumber != nil:
		old := findRevision(s, plan.Renumber.Name)
		if err := s.client.Patch(ctx, plan.Renumber, client.MergeFrom(old)); err != nil {
			return nil, fmt.Errorf("failed to renumber ControllerRevision %s: %w", plan.Renumber.Name, err)
		}
		s.recorder.Eventf(w, plan.Renumber, corev1.EventTypeNormal, EventRevisionRecorded, "Update",
			"Returned to an earlier template, now revision %d (template hash %s)", plan.Current.Number, plan.Current.TemplateHash)
	}

	var errs []error
	for _, old := range plan.Delete {
		err := s.client.Delete(ctx, old, client.Preconditions{UID: &old.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete old ControllerRevision %s: %w", old.Name, err))
		}
	}
	return &plan.Current, errors.Join(errs...)
}

// findRevision returns the observed revision called name.
func findRevision(s *scope, name string) client.Object {
	for i := range s.revisions {
		if s.revisions[i].Name == name {
			return &s.revisions[i]
		}
	}
	return nil
}
