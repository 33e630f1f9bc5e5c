package companions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/hubclients"
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/patch"
	"github.com/citycells/compute/internal/referenceddata"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "referenced-data"

// hubNamespaceWait is how long a pass waits for the federator to create
// the federation namespace before looking again.
const hubNamespaceWait = 250 * time.Millisecond

// Reconciler writes the companions of every project namespace.
type Reconciler struct {
	// Manager resolves project clusters; set by SetupWithManager.
	Manager mcmanager.Manager
	// Hub writes companions into the federation plane.
	Hub client.Client
	// HubReader reads the federation plane directly (the companions and
	// namespaces it decides from: never a stale cache).
	HubReader client.Reader
	// Local writes the companions next to their sources, in the project
	// namespace, for a cell that runs on the project plane itself (single
	// mode, no federation plane): Hub and HubReader are unused.
	Local bool
}

// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/status,verbs=get;patch
// +kubebuilder:rbac:groups=compute.datumapis.com,resources=workloaddeployments/finalizers,verbs=update

// SetupWithManager registers the reconciler: one request per project
// namespace, from its WorkloadDeployments and from the metadata of its
// Secrets and ConfigMaps.
func (r *Reconciler) SetupWithManager(mgr mcmanager.Manager, hubCluster cluster.Cluster) error {
	if mgr == nil || (hubCluster == nil && !r.Local) {
		return errors.New("referenced-data controller: a manager and the federation plane (or Local) are required")
	}
	r.Manager = mgr
	hubclients.Default(&r.Hub, &r.HubReader, hubCluster)
	return mcbuilder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			SkipNameValidation: mgr.GetControllerOptions().SkipNameValidation,
		}).
		Watches(&computev1alpha.WorkloadDeployment{}, byNamespace, mcbuilder.WithPredicates(deploymentChanged)).
		WatchesMetadata(&corev1.Secret{}, byNamespace).
		WatchesMetadata(&corev1.ConfigMap{}, byNamespace).
		Complete(r)
}

// byNamespace maps any object to the request of its namespace.
func byNamespace(clusterName string, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []mcreconcile.Request {
		return []mcreconcile.Request{{Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace()}},
			ClusterName: clusterName}}
	})
}

// deploymentChanged passes what can change what a deployment references or
// records: its spec, annotations, finalizers and deletion, and a status
// write that lost its ReferencedDataReady condition to another writer.
var deploymentChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okO := e.ObjectOld.(*computev1alpha.WorkloadDeployment)
		n, okN := e.ObjectNew.(*computev1alpha.WorkloadDeployment)
		if !okO || !okN {
			return true
		}
		return o.Generation != n.Generation || !maps.Equal(o.Annotations, n.Annotations) ||
			!slices.Equal(o.Finalizers, n.Finalizers) || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
			!equality.Semantic.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, computev1alpha.ConditionReferencedDataReady),
				meta.FindStatusCondition(n.Status.Conditions, computev1alpha.ConditionReferencedDataReady))
	},
}

// Reconcile resolves the referenced data of one project namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName == "" || req.Namespace == "" {
		return ctrl.Result{}, nil
	}
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to get project cluster %q: %w", req.ClusterName, err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", req.ClusterName, "namespace", req.Namespace))
	var list computev1alpha.WorkloadDeploymentList
	if err := cl.GetClient().List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list WorkloadDeployments: %w", err)
	}
	var wds []*computev1alpha.WorkloadDeployment
	for i := range list.Items {
		if concerned(&list.Items[i]) {
			wds = append(wds, &list.Items[i])
		}
	}
	if len(wds) == 0 {
		return ctrl.Result{}, nil
	}
	s := &pass{project: cl.GetClient(), reader: cl.GetAPIReader(), hub: r.Hub, hubReader: r.HubReader,
		cluster: req.ClusterName, namespace: req.Namespace, sources: map[string]*source{}}
	if r.Local {
		s.hub, s.hubReader, s.hubNamespace = s.project, s.reader, req.Namespace
	} else if ok, err := s.findHubNamespace(ctx); err != nil || !ok {
		return ctrl.Result{RequeueAfter: hubNamespaceWait}, err
	}
	err = s.run(ctx, wds)
	if names.NotGrantedYet(err, s.hubCreated, time.Now()) {
		// A new federation namespace whose companions role is being bound.
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the companions role to be bound in the new federation namespace", "namespace", s.hubNamespace)
		return ctrl.Result{RequeueAfter: hubNamespaceWait}, nil
	}
	return ctrl.Result{}, err
}

// concerned reports whether the resolver has anything to do for wd: its
// template references data, or it carries what an earlier template made
// the resolver write.
func concerned(wd *computev1alpha.WorkloadDeployment) bool {
	_, recorded := wd.Annotations[computev1alpha.ExpectedReferencedDataAnnotation]
	return recorded || controllerutil.ContainsFinalizer(wd, computev1alpha.ReferencedDataFinalizer) ||
		len(referenceddata.Refs(&wd.Spec.Template.Spec)) > 0
}

// pass is one reconcile of a project namespace.
type pass struct {
	project client.Client
	reader  client.Reader
	// hub writes and hubReader reads where the companions go: the
	// federation plane, or the project plane itself (Local).
	hub       client.Client
	hubReader client.Reader
	cluster   string
	namespace string
	// hubNamespace is the federation namespace of the project namespace,
	// and hubCreated when it was made.
	hubNamespace string
	hubCreated   time.Time
	// sources are the objects read, by token.
	sources map[string]*source
}

// findHubNamespace derives the federation namespace from the project
// namespace's UID, read live (never from anything a user can write), and
// reports whether the federator has made it yet, for this project
// namespace.
func (s *pass) findHubNamespace(ctx context.Context) (bool, error) {
	ns := &corev1.Namespace{}
	if err := s.reader.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	s.hubNamespace = names.FederationNamespace(ns.UID)
	hubNS := &corev1.Namespace{}
	if err := s.hubReader.Get(ctx, client.ObjectKey{Name: s.hubNamespace}, hubNS); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	s.hubCreated = hubNS.CreationTimestamp.Time
	l := hubNS.Labels
	return l[computev1alpha.UpstreamClusterNameLabel] == names.UpstreamClusterName(s.cluster) &&
		l[computev1alpha.UpstreamNamespaceLabel] == s.namespace, nil
}

// run resolves every deployment, writes the companions they need, deletes
// those none needs, then records the outcome on each deployment.
func (s *pass) run(ctx context.Context, wds []*computev1alpha.WorkloadDeployment) error {
	existing, err := s.hubCompanions(ctx)
	if err != nil {
		return err
	}
	desired := map[string]client.Object{}
	outcomes := make([]outcome, len(wds))
	room := &budget{seen: map[string]bool{}}
	for _, i := range oldestFirst(wds) {
		wd := wds[i]
		if wd.DeletionTimestamp != nil {
			continue
		}
		outcomes[i] = s.resolve(ctx, wd)
		if fits, bytes := room.admit(outcomes[i]); !fits {
			outcomes[i] = overBudget(outcomes[i], wd, bytes)
		}
		for _, t := range outcomes[i].keep {
			if obj, ok := existing[referenceddata.CompanionNameOfToken(t)]; ok {
				desired[obj.GetName()] = obj
			}
		}
		for _, c := range outcomes[i].companions {
			desired[c.GetName()] = c
		}
	}
	var errs []error
	for name, obj := range desired {
		if err := s.apply(ctx, existing[name], obj); err != nil {
			errs = append(errs, err)
		}
	}
	collected := len(errs) == 0
	for name, obj := range existing {
		if _, ok := desired[name]; ok {
			continue
		}
		if err := s.hub.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed to delete companion %s/%s: %w", obj.GetNamespace(), name, err))
			collected = false
		}
	}
	for i, wd := range wds {
		if err := s.record(ctx, wd, outcomes[i], collected, len(errs) == 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// oldestFirst returns the indexes of wds, the oldest deployment first (then
// by name): the namespace's budget goes to the deployments that had it.
func oldestFirst(wds []*computev1alpha.WorkloadDeployment) []int {
	order := make([]int, len(wds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(wds[a].CreationTimestamp.Compare(wds[b].CreationTimestamp.Time), strings.Compare(wds[a].Name, wds[b].Name))
	})
	return order
}

// hubCompanions lists the companions of the federation namespace, by name.
func (s *pass) hubCompanions(ctx context.Context) (map[string]client.Object, error) {
	out := map[string]client.Object{}
	sel := []client.ListOption{client.InNamespace(s.hubNamespace),
		client.MatchingLabels{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue}}
	var cms corev1.ConfigMapList
	if err := s.hubReader.List(ctx, &cms, sel...); err != nil {
		return nil, fmt.Errorf("failed to list companion ConfigMaps in %s: %w", s.hubNamespace, err)
	}
	for i := range cms.Items {
		out[cms.Items[i].Name] = &cms.Items[i]
	}
	var secrets corev1.SecretList
	if err := s.hubReader.List(ctx, &secrets, sel...); err != nil {
		return nil, fmt.Errorf("failed to list companion Secrets in %s: %w", s.hubNamespace, err)
	}
	for i := range secrets.Items {
		out[secrets.Items[i].Name] = &secrets.Items[i]
	}
	return out, nil
}

// apply creates desired, or updates existing to carry it.
func (s *pass) apply(ctx context.Context, existing, desired client.Object) error {
	if existing == nil {
		if err := s.hub.Create(ctx, desired); err != nil {
			// AlreadyExists: one of ours written since the list (the
			// retry sees it), or an object compute did not write that
			// holds the name, which it never overwrites.
			return fmt.Errorf("failed to create companion %s/%s: %w", desired.GetNamespace(), desired.GetName(), err)
		}
		return nil
	}
	if sameCompanion(existing, desired) {
		return nil
	}
	desired.SetResourceVersion(existing.GetResourceVersion())
	desired.SetUID(existing.GetUID())
	if err := s.hub.Update(ctx, desired); err != nil {
		return fmt.Errorf("failed to update companion %s/%s: %w", desired.GetNamespace(), desired.GetName(), err)
	}
	return nil
}

// record writes what was resolved for wd: the annotations and finalizer,
// then the condition. A deployment being deleted loses its finalizer once
// the companions are collected.
func (s *pass) record(ctx context.Context, wd *computev1alpha.WorkloadDeployment, o outcome, collected, written bool) error {
	if wd.DeletionTimestamp != nil {
		if !collected || !controllerutil.ContainsFinalizer(wd, computev1alpha.ReferencedDataFinalizer) {
			return nil
		}
		before := wd.DeepCopy()
		controllerutil.RemoveFinalizer(wd, computev1alpha.ReferencedDataFinalizer)
		return client.IgnoreNotFound(s.project.Patch(ctx, wd, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
	}
	if o.err == "" && !written {
		// The companions are not all written: the cell must not be told
		// to expect them yet.
		return nil
	}
	before := wd.DeepCopy()
	ann := o.expected.Annotations()
	if o.err != "" {
		// Keep what the cell expected so far: running Instances stay as
		// they are, new ones wait for the error to clear.
		prev := referenceddata.ExpectedOf(wd.Annotations)
		prev.Error = o.err
		prev.Resolved = true
		prev.TemplateHash = o.expected.TemplateHash
		ann = prev.Annotations()
	}
	wd.Annotations = mergeAnnotations(wd.Annotations, ann)
	switch {
	case len(o.expected.Tokens) > 0 || o.err != "":
		controllerutil.AddFinalizer(wd, computev1alpha.ReferencedDataFinalizer)
	case collected:
		// Nothing referenced any more, and what only it needed is gone.
		controllerutil.RemoveFinalizer(wd, computev1alpha.ReferencedDataFinalizer)
	}
	if !equality.Semantic.DeepEqual(before.ObjectMeta, wd.ObjectMeta) {
		if err := s.project.Patch(ctx, wd, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("failed to record the referenced data of WorkloadDeployment %s: %w", wd.Name, client.IgnoreNotFound(err))
		}
	}
	cond := o.condition
	cond.ObservedGeneration = wd.Generation
	_, err := patch.Status(ctx, s.project, wd, func(wd *computev1alpha.WorkloadDeployment) {
		meta.SetStatusCondition(&wd.Status.Conditions, cond)
	}, patch.WithOptimisticLock())
	return err
}

// mergeAnnotations sets over on base. A cleared error stays as an empty
// value: the hub copy only ever gains or changes annotations, so a removed
// key would never leave it.
func mergeAnnotations(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// reasonMessage formats a resolution error as the error annotation holds
// it.
func reasonMessage(reason, format string, args ...any) string {
	return reason + ": " + fmt.Sprintf(format, args...)
}

// describe lists tokens for a message.
func describe(tokens []string) string { return strings.Join(tokens, ", ") }
