package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/placement"
	"github.com/citycells/compute/internal/webhook/validation"
)

// workloadAdmission defaults and validates Workloads.
type workloadAdmission struct {
	clusters Clusters
}

var (
	_ admission.Defaulter[*computev1alpha.Workload] = &workloadAdmission{}
	_ admission.Validator[*computev1alpha.Workload] = &workloadAdmission{}
)

// Default fills in w's defaults and, when the request changes the template,
// records who made the change.
func (a *workloadAdmission) Default(ctx context.Context, w *computev1alpha.Workload) error {
	validation.DefaultWorkload(w)
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		// Called outside an admission request: nobody to attribute.
		return nil
	}
	return recordChangedBy(req, w)
}

// recordChangedBy sets the template-changed-by annotation to the requesting
// user when req creates w or changes its template, and otherwise keeps the
// value the stored Workload has: nobody writes history by hand.
func recordChangedBy(req admission.Request, w *computev1alpha.Workload) error {
	old, err := oldWorkload(req)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	by := req.UserInfo.Username
	if old != nil && sameTemplate(old, w) {
		by = old.Annotations[computev1alpha.TemplateChangedByAnnotation]
		if by == "" {
			delete(w.Annotations, computev1alpha.TemplateChangedByAnnotation)
			return nil
		}
	}
	if by != "" {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[computev1alpha.TemplateChangedByAnnotation] = by
	}
	return nil
}

// oldWorkload is the stored Workload an update changes, defaulted; nil for
// any other operation.
func oldWorkload(req admission.Request) (*computev1alpha.Workload, error) {
	if req.Operation != admissionv1.Update {
		return nil, nil
	}
	old := &computev1alpha.Workload{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return nil, fmt.Errorf("failed to decode the current Workload: %w", err)
	}
	validation.DefaultWorkload(old)
	return old, nil
}

// sameTemplate reports whether two Workloads have the same template, by
// value in the canonical form (equality.Semantic: quantities compared as
// numbers), never by a hash a colliding template could share.
func sameTemplate(a, b *computev1alpha.Workload) bool {
	return equality.Semantic.DeepEqual(names.CanonicalTemplate(&a.Spec.Template), names.CanonicalTemplate(&b.Spec.Template))
}

// ValidateCreate validates a new Workload.
func (a *workloadAdmission) ValidateCreate(ctx context.Context, w *computev1alpha.Workload) (admission.Warnings, error) {
	env, err := a.environment(ctx, w)
	if err != nil {
		return nil, err
	}
	errs := validation.ValidateWorkloadCreate(w, env)
	unreadable, err := a.unreadable(ctx, w)
	if err != nil {
		return nil, err
	}
	return warnings(w, nil, env), invalid(w, append(errs, unreadable...))
}

// unreadable returns the references of w's template its author may not
// read (see unreadableReferences); none outside an admission request.
func (a *workloadAdmission) unreadable(ctx context.Context, w *computev1alpha.Workload) (field.ErrorList, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, nil //nolint:nilerr // called outside an admission request: nobody to check
	}
	cl, err := clusterOf(ctx, a.clusters)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(err.Error())
	}
	return unreadableReferences(ctx, cl.GetClient(), req, w)
}

// ValidateUpdate validates a change to a Workload.
func (a *workloadAdmission) ValidateUpdate(ctx context.Context, old, w *computev1alpha.Workload) (admission.Warnings, error) {
	if w.DeletionTimestamp != nil {
		return nil, nil
	}
	env, err := a.environment(ctx, w)
	if err != nil {
		return nil, err
	}
	errs := validation.ValidateWorkloadUpdate(w, old, env)
	unreadable, err := a.unreadable(ctx, w)
	if err != nil {
		return nil, err
	}
	return warnings(w, old, env), invalid(w, append(errs, unreadable...))
}

// ValidateDelete accepts every deletion.
func (a *workloadAdmission) ValidateDelete(context.Context, *computev1alpha.Workload) (admission.Warnings, error) {
	return nil, nil
}

// environment reads the cities bound to w's namespace in the request's
// project cluster, straight from its API server so a binding made a moment
// ago counts.
func (a *workloadAdmission) environment(ctx context.Context, w *computev1alpha.Workload) (validation.Environment, error) {
	cl, err := clusterOf(ctx, a.clusters)
	if err != nil {
		return validation.Environment{}, apierrors.NewServiceUnavailable(err.Error())
	}
	cities, err := locations.Load(ctx, cl.GetAPIReader(), w.Namespace)
	if err != nil {
		return validation.Environment{}, apierrors.NewServiceUnavailable(
			fmt.Sprintf("cannot check the cities of Workload %s: %v", w.Name, err))
	}
	types, err := catalog.Load(ctx, cl.GetAPIReader())
	if err != nil {
		return validation.Environment{}, apierrors.NewServiceUnavailable(
			fmt.Sprintf("cannot check the instance type of Workload %s: %v", w.Name, err))
	}
	return validation.Environment{Cities: cities, InstanceTypes: types}, nil
}

// invalid returns the Invalid error of errs, nil when there are none.
func invalid(w *computev1alpha.Workload, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadKind).GroupKind(), w.Name, errs)
}

// warnings point out what is allowed but probably not meant: a retired or
// missing instance type, volumes that nothing attaches, and cities that are
// bound but not ready. old is the stored Workload of an update, nil on
// create.
func warnings(w, old *computev1alpha.Workload, env validation.Environment) admission.Warnings {
	out := admission.Warnings(validation.InstanceTypeWarnings(w, old, env))
	for _, v := range validation.UnusedVolumes(&w.Spec.Template.Spec) {
		out = append(out, fmt.Sprintf("spec.template.spec.volumes: volume %s is not attached to any container or virtual machine", v))
	}
	seen := map[string]bool{}
	for _, t := range placement.Targets(w, env.Cities, nil) {
		if t.Reason == computev1alpha.ReasonLocationNotReady && !seen[t.Location.Name] {
			seen[t.Location.Name] = true
			out = append(out, fmt.Sprintf("Location %s (%s) is bound but not ready: %s; no instances run there until it is", t.Location.Name, t.CityCode, t.Message))
		}
	}
	return out
}
