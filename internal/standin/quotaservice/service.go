package quotaservice

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
)

// consumerIndex indexes claims, grants and buckets by consumerKey.
const consumerIndex = "quota.consumer"

// Controller names, unique per manager.
const (
	evaluatorName    = "quota-evaluator"
	grantName        = "quota-grant"
	registrationName = "quota-registration"
)

// NewScheme returns a scheme with the kinds the service reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("failed to build scheme: %w", err)
	}
	if err := quotav1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("failed to build scheme: %w", err)
	}
	// The project's LocationBindings and Locations: which cities a cell
	// must serve to claim here.
	if err := networkingv1alpha.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("failed to build scheme: %w", err)
	}
	return s, nil
}

// Setup adds the quota service to mgr: the bootstrap (namespaces,
// registrations, default grant), the evaluation loop per consumer, and the
// Active conditions of grants and registrations. mgr's scheme must know the
// quota kinds, the networking kinds and Namespaces (see NewScheme); the
// plane must serve LocationBindings and Locations.
func Setup(ctx context.Context, mgr manager.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	if err := indexConsumers(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.Add(&bootstrap{client: mgr.GetClient(), reader: mgr.GetAPIReader(), opts: opts}); err != nil {
		return fmt.Errorf("failed to add the quota bootstrap: %w", err)
	}

	if err := setupEvaluator(mgr, opts); err != nil {
		return err
	}

	act := &activationReconciler{client: mgr.GetClient(), clock: opts.Clock}
	allGrants := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return allOf(ctx, mgr.GetClient(), &quotav1alpha1.ResourceGrantList{})
	})
	allRegistrations := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return allOf(ctx, mgr.GetClient(), &quotav1alpha1.ResourceRegistrationList{})
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named(grantName).
		For(&quotav1alpha1.ResourceGrant{}).
		Watches(&quotav1alpha1.ResourceRegistration{}, allGrants).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(reconcile.Func(act.reconcileGrant)); err != nil {
		return fmt.Errorf("failed to set up the grant controller: %w", err)
	}
	// Registrations of one type judge each other (duplicates), so any
	// change re-examines all of them.
	if err := ctrl.NewControllerManagedBy(mgr).Named(registrationName).
		For(&quotav1alpha1.ResourceRegistration{}).
		Watches(&quotav1alpha1.ResourceRegistration{}, allRegistrations).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(reconcile.Func(act.reconcileRegistration)); err != nil {
		return fmt.Errorf("failed to set up the registration controller: %w", err)
	}
	return nil
}

// setupEvaluator adds the evaluation loop, keyed by consumer, to mgr.
func setupEvaluator(mgr manager.Manager, opts Options) error {
	eval := &consumerReconciler{
		client:          mgr.GetClient(),
		reader:          mgr.GetAPIReader(),
		clock:           opts.Clock,
		bucketNamespace: opts.BucketNamespace,
		holdGrace:       opts.HoldGrace,
		maxPerSource:    opts.MaxClaimsPerSource,
		recorder:        mgr.GetEventRecorder("compute-quota"),
		ledgers:         map[quotav1alpha1.ConsumerRef]*ledger{},
	}
	registerMetrics()
	byConsumer := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []quotav1alpha1.ConsumerRef {
		if c, ok := consumerOf(o); ok && c.Kind != "" && c.Name != "" {
			return []quotav1alpha1.ConsumerRef{c}
		}
		return nil
	})
	// A registration change can make any consumer's claims valid or not,
	// and a binding or Location change any cell's claims refused or not.
	everyConsumer := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []quotav1alpha1.ConsumerRef {
		return knownConsumers(ctx, mgr.GetClient())
	})
	err := builder.TypedControllerManagedBy[quotav1alpha1.ConsumerRef](mgr).
		Named(evaluatorName).
		Watches(&quotav1alpha1.ResourceClaim{}, byConsumer).
		Watches(&quotav1alpha1.ResourceClaim{}, releasedSiblings(mgr.GetClient(), opts.MaxClaimsPerSource)).
		Watches(&quotav1alpha1.ResourceGrant{}, byConsumer).
		Watches(&quotav1alpha1.AllowanceBucket{}, byConsumer).
		Watches(&quotav1alpha1.ResourceRegistration{}, everyConsumer).
		Watches(&networkingv1alpha.LocationBinding{}, everyConsumer).
		Watches(&networkingv1alpha.Location{}, everyConsumer).
		WithOptions(controller.TypedOptions[quotav1alpha1.ConsumerRef]{
			MaxConcurrentReconciles: opts.MaxConcurrentConsumers,
			SkipNameValidation:      ptr.To(true),
			LogConstructor: func(c *quotav1alpha1.ConsumerRef) logr.Logger {
				log := mgr.GetLogger().WithValues("controller", evaluatorName)
				if c != nil {
					log = log.WithValues("consumer", consumerKey(*c))
				}
				return log
			},
		}).
		Complete(eval)
	if err != nil {
		return fmt.Errorf("failed to set up the quota evaluator: %w", err)
	}
	return nil
}

// indexConsumers indexes claims, grants and buckets by their consumer, and
// claims by the cell that made them.
func indexConsumers(ctx context.Context, mgr manager.Manager) error {
	extract := func(o client.Object) []string {
		if c, ok := consumerOf(o); ok {
			return []string{consumerKey(c)}
		}
		return nil
	}
	for _, obj := range []client.Object{&quotav1alpha1.ResourceClaim{}, &quotav1alpha1.ResourceGrant{}, &quotav1alpha1.AllowanceBucket{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, consumerIndex, extract); err != nil {
			return fmt.Errorf("failed to index %T by consumer: %w", obj, err)
		}
	}
	bySource := func(o client.Object) []string {
		if c, ok := o.(*quotav1alpha1.ResourceClaim); ok && sourceOf(c) != "" {
			return []string{sourceOf(c)}
		}
		return nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &quotav1alpha1.ResourceClaim{}, sourceIndex, bySource); err != nil {
		return fmt.Errorf("failed to index ResourceClaims by cell: %w", err)
	}
	return nil
}

// consumerOf returns the consumer a claim, grant or bucket refers to.
func consumerOf(o client.Object) (quotav1alpha1.ConsumerRef, bool) {
	switch v := o.(type) {
	case *quotav1alpha1.ResourceClaim:
		return v.Spec.ConsumerRef, true
	case *quotav1alpha1.ResourceGrant:
		return v.Spec.ConsumerRef, true
	case *quotav1alpha1.AllowanceBucket:
		return v.Spec.ConsumerRef, true
	}
	return quotav1alpha1.ConsumerRef{}, false
}

// knownConsumers lists every consumer with a claim or grant in the cache.
func knownConsumers(ctx context.Context, c client.Reader) []quotav1alpha1.ConsumerRef {
	seen := map[quotav1alpha1.ConsumerRef]bool{}
	claims := &quotav1alpha1.ResourceClaimList{}
	if err := c.List(ctx, claims); err == nil {
		for i := range claims.Items {
			seen[claims.Items[i].Spec.ConsumerRef] = true
		}
	}
	grants := &quotav1alpha1.ResourceGrantList{}
	if err := c.List(ctx, grants); err == nil {
		for i := range grants.Items {
			seen[grants.Items[i].Spec.ConsumerRef] = true
		}
	}
	out := make([]quotav1alpha1.ConsumerRef, 0, len(seen))
	for k := range seen {
		if k.Kind != "" && k.Name != "" {
			out = append(out, k)
		}
	}
	return out
}

// allOf returns a request for every object of a list kind in the cache.
func allOf(ctx context.Context, c client.Reader, list client.ObjectList) []reconcile.Request {
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	switch l := list.(type) {
	case *quotav1alpha1.ResourceGrantList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	case *quotav1alpha1.ResourceRegistrationList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	}
	return out
}

// NewManager returns a controller manager against a project's quota plane
// with the service set up. opts.Scheme, when nil, defaults to NewScheme().
func NewManager(ctx context.Context, cfg *rest.Config, mgrOpts manager.Options, opts Options) (manager.Manager, error) {
	if mgrOpts.Scheme == nil {
		s, err := NewScheme()
		if err != nil {
			return nil, err
		}
		mgrOpts.Scheme = s
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("failed to create the quota service manager: %w", err)
	}
	if err := Setup(ctx, mgr, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}
