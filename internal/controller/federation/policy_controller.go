package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/hubclients"
)

// PolicyControllerName names the PropagationPolicy controller in logs and
// metrics.
const PolicyControllerName = "propagationpolicy"

// PolicyReconciler keeps one PropagationPolicy per city in every hub
// namespace compute maps a project namespace to, for as long as a hub
// WorkloadDeployment of that city exists there. Its requests are
// CityRequest(hub namespace, city code).
type PolicyReconciler struct {
	// Hub reads the federation plane from its cache and writes to it.
	Hub client.Client
	// HubReader reads the federation plane directly: a policy is deleted
	// only when a live list shows no deployment of its city.
	HubReader client.Reader
	// Locks serialise the policy decisions per city with the federator's;
	// share the federator's (SetupWithManager makes its own when nil).
	Locks *CityLocks
}

// ErrPolicyDeleting means a city's PropagationPolicy is still being deleted
// (Karmada holds a finalizer on it), so a new one cannot be made yet.
var ErrPolicyDeleting = errors.New("PropagationPolicy is still being deleted")

// policyWait is how long to wait for a policy being deleted to go.
const policyWait = 250 * time.Millisecond

// SetupWithManager registers the controller with mgr (the management role's
// local manager). It watches the hub WorkloadDeployments compute copied and
// compute's PropagationPolicies in hubCluster, which the caller adds to
// mgr.
func (r *PolicyReconciler) SetupWithManager(mgr ctrl.Manager, hubCluster cluster.Cluster) error {
	if mgr == nil || hubCluster == nil {
		return errors.New("propagationpolicy controller: a manager and the federation plane are required")
	}
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	if r.Locks == nil {
		r.Locks = &CityLocks{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(PolicyControllerName).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &computev1alpha.WorkloadDeployment{},
			handler.TypedEnqueueRequestsFromMapFunc(cityRequests[*computev1alpha.WorkloadDeployment]))).
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &policyv1alpha1.PropagationPolicy{},
			handler.TypedEnqueueRequestsFromMapFunc(cityRequests[*policyv1alpha1.PropagationPolicy]))).
		Complete(r)
}

// cityRequests maps a hub object to the request of its city.
func cityRequests[T client.Object](_ context.Context, obj T) []reconcile.Request {
	if req, ok := cityRequestFor(obj); ok {
		return []reconcile.Request{req}
	}
	return nil
}

// Reconcile keeps or deletes the policy of one city in one hub namespace.
func (r *PolicyReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Hub.Get(ctx, client.ObjectKey{Name: req.Namespace}, ns); err != nil {
		// Not a namespace compute maps a project namespace to (the cache
		// holds only those): its policies are somebody else's.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	err := ReconcileCityPolicy(ctx, r.Locks, r.Hub, r.HubReader, req.Namespace, req.Name)
	if errors.Is(err, ErrPolicyDeleting) {
		// Its deletion event brings the city back; this bounds the wait.
		return ctrl.Result{RequeueAfter: policyWait}, nil
	}
	return ctrl.Result{}, err
}

// ReconcileCityPolicy ensures the PropagationPolicy of city in hub namespace
// namespace while a WorkloadDeployment copy of that city, not being
// deleted, exists there, and deletes it otherwise. The cache decides that a
// policy is wanted; only a live list, taken under the city's lock, decides
// that it is not.
func ReconcileCityPolicy(ctx context.Context, locks *CityLocks, c client.Client, reader client.Reader, namespace, city string) error {
	unlock := locks.Lock(namespace, city)
	defer unlock()
	wanted, err := cityWanted(ctx, c, namespace, city)
	if err != nil {
		return err
	}
	if !wanted {
		if wanted, err = cityWanted(ctx, reader, namespace, city); err != nil {
			return err
		}
	}
	desired := CityPolicy(namespace, city)
	if wanted {
		_, err := EnsurePolicy(ctx, c, reader, desired)
		return err
	}
	return deletePolicy(ctx, c, reader, desired)
}

// cityWanted reports whether a compute copy of a WorkloadDeployment of city
// that is not being deleted exists in namespace.
func cityWanted(ctx context.Context, reader client.Reader, namespace, city string) (bool, error) {
	var list computev1alpha.WorkloadDeploymentList
	// Read-only: a cache need not copy the city's deployments.
	if err := reader.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{computev1alpha.CityCodeTopologyLabel: city}, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("failed to list the WorkloadDeployments of %s in namespace %s of the federation plane: %w", city, namespace, err)
	}
	for i := range list.Items {
		wd := &list.Items[i]
		if wd.DeletionTimestamp == nil && wd.Labels[computev1alpha.UpstreamClusterNameLabel] != "" {
			return true, nil
		}
	}
	return false, nil
}

// EnsurePolicy creates the policy desired, or restores the fields compute
// decides on the existing one, and returns the policy as stored. A policy
// of that name that compute did not create is never touched; for one still
// being deleted it returns an error wrapping ErrPolicyDeleting. Callers
// hold the city's lock.
func EnsurePolicy(ctx context.Context, c client.Client, reader client.Reader, desired *policyv1alpha1.PropagationPolicy) (*policyv1alpha1.PropagationPolicy, error) {
	existing := &policyv1alpha1.PropagationPolicy{}
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		created := desired.DeepCopy()
		err = c.Create(ctx, created)
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to create PropagationPolicy %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		err = reader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read PropagationPolicy %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if existing.Labels[computev1alpha.ManagedByLabel] != computev1alpha.ManagedByCompute {
		return nil, fmt.Errorf("PropagationPolicy %s/%s exists and was not created by compute; delete it so compute can route %s",
			desired.Namespace, desired.Name, desired.Labels[computev1alpha.CityCodeTopologyLabel])
	}
	if existing.DeletionTimestamp != nil {
		return nil, fmt.Errorf("%w: %s/%s", ErrPolicyDeleting, desired.Namespace, desired.Name)
	}
	if !policyDrifted(existing, desired) {
		return existing, nil
	}
	patched := existing.DeepCopy()
	patched.Spec.ResourceSelectors = desired.Spec.ResourceSelectors
	patched.Spec.Placement.ClusterAffinity = desired.Spec.Placement.ClusterAffinity
	patched.Spec.Placement.ReplicaScheduling = desired.Spec.Placement.ReplicaScheduling
	if err := c.Patch(ctx, patched, client.MergeFrom(existing)); err != nil {
		return nil, fmt.Errorf("failed to update PropagationPolicy %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return patched, nil
}

// ClaimedBy marks a hub copy as claimed by policy the way Karmada's
// detector does (the policy's permanent-id label, its namespace and name
// annotations), so that the detector, finding the copy already claimed,
// does not update it before binding it: one write fewer per copy in the
// federation plane, and no race between the detector's update and
// compute's next one. A policy without a permanent id yet (Karmada's
// webhook assigns it) claims nothing; the detector then claims the copy
// itself.
func ClaimedBy(hubCopy *computev1alpha.WorkloadDeployment, policy *policyv1alpha1.PropagationPolicy) {
	id := policy.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel]
	if id == "" {
		return
	}
	if hubCopy.Labels == nil {
		hubCopy.Labels = map[string]string{}
	}
	if hubCopy.Annotations == nil {
		hubCopy.Annotations = map[string]string{}
	}
	hubCopy.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] = id
	hubCopy.Annotations[policyv1alpha1.PropagationPolicyNamespaceAnnotation] = policy.Namespace
	hubCopy.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation] = policy.Name
}

// deletePolicy deletes compute's policy of desired's name, if there is one.
func deletePolicy(ctx context.Context, c client.Client, reader client.Reader, desired *policyv1alpha1.PropagationPolicy) error {
	existing := &policyv1alpha1.PropagationPolicy{}
	err := reader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read PropagationPolicy %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if existing.Labels[computev1alpha.ManagedByLabel] != computev1alpha.ManagedByCompute || existing.DeletionTimestamp != nil {
		return nil
	}
	if err := c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete PropagationPolicy %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return nil
}
