package webhook

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/webhook/validation"
)

// instanceTypeAdmission validates InstanceTypes against the other types of
// the plane (validation.ValidateInstanceType*).
type instanceTypeAdmission struct {
	clusters    Clusters
	gracePeriod time.Duration
	now         func() time.Time
}

var _ admission.Validator[*computev1alpha.InstanceType] = &instanceTypeAdmission{}

// ValidateCreate validates a new InstanceType.
func (a *instanceTypeAdmission) ValidateCreate(ctx context.Context, it *computev1alpha.InstanceType) (admission.Warnings, error) {
	env, err := a.environment(ctx)
	if err != nil {
		return nil, err
	}
	return nil, invalidInstanceType(it, validation.ValidateInstanceTypeCreate(it, env))
}

// ValidateUpdate validates a change to an InstanceType.
func (a *instanceTypeAdmission) ValidateUpdate(ctx context.Context, old, it *computev1alpha.InstanceType) (admission.Warnings, error) {
	env, err := a.environment(ctx)
	if err != nil {
		return nil, err
	}
	return nil, invalidInstanceType(it, validation.ValidateInstanceTypeUpdate(it, old, env))
}

// ValidateDelete refuses to delete a live type's replacement.
func (a *instanceTypeAdmission) ValidateDelete(ctx context.Context, it *computev1alpha.InstanceType) (admission.Warnings, error) {
	env, err := a.environment(ctx)
	if err != nil {
		return nil, err
	}
	return nil, invalidInstanceType(it, validation.ValidateInstanceTypeDelete(it, env))
}

// environment reads the plane's InstanceTypes straight from its API server,
// so a replacement created a moment ago counts.
func (a *instanceTypeAdmission) environment(ctx context.Context) (validation.InstanceTypeEnvironment, error) {
	cl, err := clusterOf(ctx, a.clusters)
	if err != nil {
		return validation.InstanceTypeEnvironment{}, apierrors.NewServiceUnavailable(err.Error())
	}
	types, err := catalog.Load(ctx, cl.GetAPIReader())
	if err != nil {
		return validation.InstanceTypeEnvironment{}, apierrors.NewServiceUnavailable(fmt.Sprintf("cannot check the InstanceType: %v", err))
	}
	return validation.InstanceTypeEnvironment{Types: types, GracePeriod: a.gracePeriod, Now: a.now()}, nil
}

// invalidInstanceType returns the Invalid error of errs, nil when there are
// none.
func invalidInstanceType(it *computev1alpha.InstanceType, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(computev1alpha.GroupVersion.WithKind(computev1alpha.InstanceTypeKind).GroupKind(), it.Name, errs)
}
