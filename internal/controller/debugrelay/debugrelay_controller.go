package debugrelay

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "debugrelay"

// Reconciler keeps the RoleBinding compute-debug-relay in every federation
// namespace of the cell (see the package documentation). A request names
// a namespace.
type Reconciler struct {
	// Client writes the RoleBindings to the cell.
	Client client.Client
	// Cache reads the namespaces and RoleBindings: a cache with
	// CacheOptions (NewCache), which the manager runs.
	Cache cache.Cache
	// User is the relay's user in the cell (--debug-relay-user); each
	// binding binds the role to it alone.
	User string
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;update,resourceNames=compute-debug-relay
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=compute-debug-relay

// SetupWithManager checks the reconciler's dependencies and registers the
// controller: a namespace's changes bring it back, and so do those of the
// RoleBinding compute-debug-relay in it (someone changed or deleted it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("debug relay controller: Client is required")
	case r.Cache == nil:
		return errors.New("debug relay controller: Cache is required")
	case r.User == "":
		return errors.New("debug relay controller: User is required")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(r.Cache, Namespace(),
			&handler.TypedEnqueueRequestForObject[*metav1.PartialObjectMetadata]{})).
		WatchesRawSource(source.Kind(r.Cache, &rbacv1.RoleBinding{},
			handler.TypedEnqueueRequestsFromMapFunc(itsNamespace))).
		Complete(r)
}

// itsNamespace enqueues the namespace a RoleBinding is in.
func itsNamespace(_ context.Context, rb *rbacv1.RoleBinding) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: rb.Namespace}}}
}

// Reconcile keeps the relay's RoleBinding of one namespace: none outside
// federation namespaces, and inside one, compute's in step with User. It
// writes only when something differs.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := Namespace()
	if err := r.Cache.Get(ctx, client.ObjectKey{Name: req.Name}, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ns.DeletionTimestamp.IsZero() || !IsFederationNamespace(ns) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", klog.KObj(ns), "roleBinding", Name)
	ctx = ctrl.LoggerInto(ctx, log)

	want := Desired(ns.Name, r.User)
	have := &rbacv1.RoleBinding{}
	if err := r.Cache.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to read the RoleBinding %s/%s: %w", ns.Name, Name, err)
		}
		return ctrl.Result{}, r.create(ctx, want)
	}
	switch {
	case !isCompute(have):
		// Somebody else's: never adopted, changed or deleted.
		log.V(1).Info("Left alone a RoleBinding compute did not create")
		return ctrl.Result{}, nil
	case inStep(have, want):
		return ctrl.Result{}, nil
	case have.RoleRef != want.RoleRef:
		// A roleRef cannot change, and compute deletes no binding.
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf(
			"the RoleBinding %s/%s labelled as compute's binds %s %s, not ClusterRole %s: delete it and compute recreates it",
			ns.Name, Name, have.RoleRef.Kind, have.RoleRef.Name, Name))
	}
	upd := have.DeepCopy()
	upd.Subjects = want.Subjects
	// The update carries the resourceVersion read: a conflict is retried.
	if err := r.Client.Update(ctx, upd); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to update the subjects of the RoleBinding %s/%s: %w", ns.Name, Name, err)
	}
	log.Info("Bound the debug relay's role to its user", "user", r.User)
	return ctrl.Result{}, nil
}

// create creates the relay's RoleBinding of a namespace. One already there
// (the cache had not seen it yet) is no error: its event brings the
// namespace back.
func (r *Reconciler) create(ctx context.Context, rb *rbacv1.RoleBinding) error {
	err := r.Client.Create(ctx, rb)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to create the RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the debug relay's RoleBinding", "user", r.User)
	return nil
}
