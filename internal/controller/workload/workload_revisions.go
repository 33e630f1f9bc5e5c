package workload

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/citycells/compute/internal/revision"
)

// writeRevisions records the current revision of plan and trims the
// history. recorded is false when the current revision could not be
// recorded (the error says why); a failed trim leaves it recorded.
func writeRevisions(ctx context.Context, s *scope, plan revision.Changes) (recorded bool, err error) {
	w := s.workload
	switch {
	case plan.Create != nil:
		if err := s.client.Create(ctx, plan.Create); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				s.recorder.Eventf(w, nil, corev1.EventTypeWarning, EventRevisionFailed, "Create",
					"Failed to record revision %d: %s", plan.Current.Number, apiMessage(err))
			}
			return false, fmt.Errorf("failed to create ControllerRevision %s: %w", plan.Create.Name, err)
		}
		s.recorder.Eventf(w, plan.Create, corev1.EventTypeNormal, EventRevisionRecorded, "Create",
			"Recorded revision %d (template hash %s)", plan.Current.Number, plan.Current.TemplateHash)
	case plan.Renumber != nil:
		old := findRevision(s, plan.Renumber.Name)
		if err := s.client.Patch(ctx, plan.Renumber, client.MergeFrom(old)); err != nil {
			return false, fmt.Errorf("failed to renumber ControllerRevision %s: %w", plan.Renumber.Name, err)
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
	return true, errors.Join(errs...)
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
