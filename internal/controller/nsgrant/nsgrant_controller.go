package nsgrant

import (
	"context"
	"errors"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Reconciler keeps the RoleBinding of one Grant in every federation
// namespace of a cluster (see the package documentation). A request names
// a namespace.
type Reconciler struct {
	// Name names the controller in logs and metrics; unique per manager.
	Name string
	// Client writes the RoleBindings.
	Client client.Client
	// Cache reads the namespaces and RoleBindings: a cache with
	// CacheOptions for Grant.Role (NewCache), which the manager runs.
	Cache cache.Cache
	// Grant is the role kept bound, and to whom: each binding binds the
	// role to Grant.User alone. When Grant.User is empty, WhoAmI names the
	// user (the identity's own, asked of the cluster once it answers).
	Grant Grant
	// WhoAmI returns the user to grant the role to when Grant.User is
	// empty; its first answer is kept.
	WhoAmI func(context.Context) (string, error)

	userMu sync.Mutex
}

// The debug relay's and the provider's grants in a cell and the
// companions' grant in the hub.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;update,resourceNames=compute-debug-relay;compute-kubernetes-provider-pods;compute-federation-companions
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=compute-debug-relay;compute-kubernetes-provider-pods;compute-federation-companions

// SetupWithManager checks the reconciler's dependencies and registers the
// controller: a namespace's changes bring it back, and so do those of the
// grant's RoleBinding in it (someone changed or deleted it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Name == "":
		return errors.New("namespace grant controller: Name is required")
	case r.Client == nil:
		return fmt.Errorf("%s controller: Client is required", r.Name)
	case r.Cache == nil:
		return fmt.Errorf("%s controller: Cache is required", r.Name)
	case r.Grant.Role == "" || (r.Grant.User == "" && r.WhoAmI == nil):
		return fmt.Errorf("%s controller: the grant's Role, and its User or WhoAmI, are required", r.Name)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		// Tests run several managers with this controller in one process.
		WithOptions(controller.Options{SkipNameValidation: mgr.GetControllerOptions().SkipNameValidation}).
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

// Reconcile keeps the grant's RoleBinding of one namespace: none outside
// federation namespaces, and inside one, compute's in step with the
// grant. It writes only when something differs.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := Namespace()
	if err := r.Cache.Get(ctx, client.ObjectKey{Name: req.Name}, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ns.DeletionTimestamp.IsZero() || !IsFederationNamespace(ns) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", klog.KObj(ns), "roleBinding", r.Grant.Role)
	ctx = ctrl.LoggerInto(ctx, log)

	grant, err := r.grant(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := grant.Desired(ns.Name)
	have := &rbacv1.RoleBinding{}
	if err := r.Cache.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("failed to read the RoleBinding %s/%s: %w", ns.Name, want.Name, err)
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
			ns.Name, want.Name, have.RoleRef.Kind, have.RoleRef.Name, want.RoleRef.Name))
	}
	upd := have.DeepCopy()
	upd.Subjects = want.Subjects
	// The update carries the resourceVersion read: a conflict is retried.
	if err := r.Client.Update(ctx, upd); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to update the subjects of the RoleBinding %s/%s: %w", ns.Name, want.Name, err)
	}
	log.Info("Bound the role to its user again", "user", grant.User)
	return ctrl.Result{}, nil
}

// create creates the grant's RoleBinding of a namespace. One already there
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
	ctrl.LoggerFrom(ctx).Info("Created the RoleBinding", "user", rb.Subjects[0].Name)
	return nil
}

// grant returns the grant with its user: Grant.User, else WhoAmI's first
// answer, kept. An error is retried with the request.
func (r *Reconciler) grant(ctx context.Context) (Grant, error) {
	r.userMu.Lock()
	defer r.userMu.Unlock()
	if r.Grant.User != "" {
		return r.Grant, nil
	}
	user, err := r.WhoAmI(ctx)
	if err != nil {
		return Grant{}, fmt.Errorf("failed to learn the user to bind %s to: %w", r.Grant.Role, err)
	}
	if user == "" {
		return Grant{}, fmt.Errorf("the user to bind %s to is unknown: the cluster named nobody", r.Grant.Role)
	}
	r.Grant.User = user
	ctrl.LoggerFrom(ctx).Info("Granting the role to this identity's own user", "user", user)
	return r.Grant, nil
}
