package references

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "workload-references"

// Reconciler records the missing Secrets and ConfigMaps of a Workload's
// template on its WorkloadDeployments.
type Reconciler struct {
	// Manager resolves project clusters; set by SetupWithManager.
	Manager mcmanager.Manager
}

// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch;patch

// SetupWithManager registers the reconciler: it watches Workloads, the
// deployments they own, and Secrets and ConfigMaps by metadata only.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if mgr == nil {
		return errors.New("references controller: a manager is required")
	}
	r.Manager = mgr
	return mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation: mgr.GetControllerOptions().SkipNameValidation,
		}).
		// What is decided depends on the Workload's template, each
		// deployment's spec (its workloadRef) and annotations, and the
		// Secrets and ConfigMaps: status updates, most of the events at
		// scale, change none of them and are not reconciled (each
		// reconcile lists the namespace's deployments).
		For(&computev1alpha.Workload{}, mcbuilder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&computev1alpha.WorkloadDeployment{}, mcbuilder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesMetadata(&corev1.Secret{}, enqueueNamespace).
		WatchesMetadata(&corev1.ConfigMap{}, enqueueNamespace).
		Complete(r)
}

// Reconcile recomputes one Workload's missing references and writes them
// on each of its deployments that does not carry them yet.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName == "" {
		// The empty name is the host cluster; never serve a project
		// request there.
		return ctrl.Result{}, nil
	}
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get project cluster %q: %w", req.ClusterName, err)
	}
	c := cl.GetClient()
	w := &computev1alpha.Workload{}
	if err := c.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", req.ClusterName, "workload", klog.KObj(w)))

	missing, err := Missing(ctx, c, w.Namespace, Required(&w.Spec.Template.Spec))
	if err != nil {
		return ctrl.Result{}, err
	}
	var wds computev1alpha.WorkloadDeploymentList
	// Read-only: annotate copies the one it patches.
	if err := c.List(ctx, &wds, client.InNamespace(w.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list WorkloadDeployments in namespace %s: %w", w.Namespace, err)
	}
	value := Format(missing)
	var errs []error
	for i := range wds.Items {
		wd := &wds.Items[i]
		if wd.Spec.WorkloadRef.UID != w.UID || wd.Annotations[computev1alpha.MissingReferencesAnnotation] == value {
			continue
		}
		if err := annotate(ctx, c, wd, value); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// Missing returns the references whose object does not exist in namespace,
// reading metadata only.
func Missing(ctx context.Context, c client.Reader, namespace string, refs []Reference) ([]Reference, error) {
	var out []Reference
	for _, ref := range refs {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, ref)
		case err != nil:
			return nil, fmt.Errorf("failed to look up %s %s: %w", ref.Kind, ref.Name, err)
		}
	}
	return out, nil
}

// annotate sets the missing-references annotation of wd to value, always
// present (empty when nothing is missing) so every copy downstream sees it
// cleared.
func annotate(ctx context.Context, c client.Client, wd *computev1alpha.WorkloadDeployment, value string) error {
	patched := wd.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[computev1alpha.MissingReferencesAnnotation] = value
	if err := c.Patch(ctx, patched, client.MergeFrom(wd)); err != nil {
		return fmt.Errorf("failed to record missing references on WorkloadDeployment %s: %w", wd.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// enqueueNamespace enqueues every Workload of the namespace a Secret or
// ConfigMap changed in.
func enqueueNamespace(clusterName string, cl cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		var list computev1alpha.WorkloadList
		if err := cl.GetCache().List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list Workloads to map a Secret or ConfigMap change",
				"cluster", clusterName, "namespace", obj.GetNamespace())
			return nil
		}
		out := make([]mcreconcile.Request, 0, len(list.Items))
		for _, w := range list.Items {
			out = append(out, mcreconcile.Request{
				Request:     reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}},
				ClusterName: clusterName,
			})
		}
		return out
	})
}
