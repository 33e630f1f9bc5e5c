// Package entitlement holds the local platform's stand-in for the service
// catalog: the Activator marks requested compute ServiceEntitlements Active,
// so `datumctl-compute` can request compute in a project of compute-local
// and proceed. Production projects get this from Milo's service catalog.
package entitlement

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/status"
)

// ComputeService is the catalog name of compute.
const ComputeService = "compute.datumapis.com"

// ReasonActivated is the Ready reason the Activator writes.
const ReasonActivated = "Activated"

// Activator activates every ServiceEntitlement for compute that is neither
// Active nor Rejected.
type Activator struct {
	// Client reads and writes ServiceEntitlements.
	Client client.Client
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=services.miloapis.com,resources=serviceentitlements,verbs=get;list;watch
// +kubebuilder:rbac:groups=services.miloapis.com,resources=serviceentitlements/status,verbs=get;update;patch

// SetupWithManager registers the Activator.
func (a *Activator) SetupWithManager(mgr ctrl.Manager) error {
	if a.Client == nil {
		a.Client = mgr.GetClient()
	}
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("entitlement-activator").
		For(&servicesv1alpha1.ServiceEntitlement{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			se, ok := o.(*servicesv1alpha1.ServiceEntitlement)
			return ok && se.Spec.ServiceRef.Name == ComputeService
		}))).
		Complete(a)
}

// Reconcile activates one entitlement.
func (a *Activator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	se := &servicesv1alpha1.ServiceEntitlement{}
	if err := a.Client.Get(ctx, req.NamespacedName, se); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if se.Spec.ServiceRef.Name != ComputeService || se.Status.Phase == servicesv1alpha1.EntitlementPhaseRejected {
		return ctrl.Result{}, nil
	}
	wrote, err := patch.Status(ctx, a.Client, se, func(se *servicesv1alpha1.ServiceEntitlement) {
		se.Status.Phase = servicesv1alpha1.EntitlementPhaseActive
		se.Status.ObservedGeneration = se.Generation
		status.SetCondition(&se.Status.Conditions, metav1.Condition{
			Type:               servicesv1alpha1.ServiceEntitlementConditionReady,
			Status:             metav1.ConditionTrue,
			Reason:             ReasonActivated,
			Message:            "compute is active for this project",
			ObservedGeneration: se.Generation,
		}, metav1.NewTime(a.Clock.Now()))
	})
	if err != nil || !wrote {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("activated compute for the project", "entitlement", se.Name)
	return ctrl.Result{}, nil
}
