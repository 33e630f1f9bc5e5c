package webhook

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// unreadableReferences refuses every ConfigMap and Secret w's template
// references that the author of req may not read: the management plane
// copies them to the cells, and nobody may reach an object through a
// Workload that they could not get themselves (Datum's SourceUnauthorized).
// Each object is asked about once, with a SubjectAccessReview as the
// requesting user, on every create and update of a Workload that
// references any: an update that leaves the template alone can still make
// the cells run it again (a restart, a city restart), so no request is
// trusted to deliver what its author may not read.
func unreadableReferences(ctx context.Context, c client.Client, req admission.Request, w *computev1alpha.Workload) (field.ErrorList, error) {
	var errs field.ErrorList
	allowed := map[string]bool{}
	var failure error
	referenceddata.Visit(&w.Spec.Template.Spec, field.NewPath("spec", "template", "spec"), func(kind, name string, _ bool, path *field.Path) {
		if len(name) > referenceddata.MaxNameLength {
			errs = append(errs, field.TooLong(path, name, referenceddata.MaxNameLength))
			return
		}
		token := referenceddata.Token(kind, name)
		ok, asked := allowed[token]
		if !asked && failure == nil {
			ok, failure = mayRead(ctx, c, req, w.Namespace, kind, name)
			allowed[token] = ok
		}
		if !ok && failure == nil {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s: %s may not get %s %s in namespace %s, so a Workload of theirs may not deliver it to instances; "+
				"ask for read access to it, or reference one you can read", computev1alpha.ReasonSourceUnauthorized, req.UserInfo.Username, kind, name, w.Namespace)))
		}
	})
	return errs, failure
}

// mayRead asks the project plane whether the author of req may get the
// object of kind and name in namespace.
func mayRead(ctx context.Context, c client.Client, req admission.Request, namespace, kind, name string) (bool, error) {
	resource := "configmaps"
	if kind == referenceddata.KindSecret {
		resource = "secrets"
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(req.UserInfo.Extra))
	for k, v := range req.UserInfo.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: resource, Name: name},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return false, apierrors.NewServiceUnavailable(fmt.Sprintf("cannot check that %s may read %s %s: %v", req.UserInfo.Username, kind, name, err))
	}
	return sar.Status.Allowed, nil
}
