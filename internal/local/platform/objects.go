//go:build linux

package platform

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"strings"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/projects"
)

// randRead is crypto/rand.Read, named for the token generator.
var randRead = rand.Read

// LocationNamespace holds the Locations in every project plane.
const LocationNamespace = "datum-locations"

// BindingNamespace holds each project's LocationBindings: the namespace
// users start in.
const BindingNamespace = "default"

// platformScheme knows the kinds the platform writes: core, Karmada clusters and
// compute's networking contract.
func platformScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		clusterv1alpha1.Install,
		networkingv1alpha.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("failed to build the platform scheme: %v", err))
		}
	}
	return s
}

// newClient returns an admin client of a plane.
func newClient(p *planes.Plane) (client.Client, error) {
	return clientFor(p.Config())
}

// clientFor returns a client with the platform scheme.
func clientFor(cfg *rest.Config) (client.Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: platformScheme()})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// ensureNamespace creates a namespace unless it exists.
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	return nil
}

// createOrUpdate creates obj or updates it with mutate applied.
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, mutate func()) (controllerutil.OperationResult, error) {
	return controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
		mutate()
		return nil
	})
}

// apply creates obj, or replaces the existing object's content with it.
func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	want := obj.DeepCopy()
	err := c.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err = c.Get(ctx, client.ObjectKeyFromObject(obj), got); err == nil {
			want = obj.DeepCopy()
			want.SetResourceVersion(got.GetResourceVersion())
			keepTheirs(want, got)
			err = c.Update(ctx, want)
		}
	}
	if err != nil {
		return fmt.Errorf("failed to apply %s %s: %w", obj.GetKind(), describeKey(obj), err)
	}
	return nil
}

// keepTheirs keeps on want, the object apply writes over got, the metadata
// other writers set on got, as kubectl apply does: labels and annotations
// want does not set (Karmada's permanent-id label on a policy may only be
// set by Karmada, and an update that drops it is refused), finalizers and
// owner references.
func keepTheirs(want, got *unstructured.Unstructured) {
	merge := func(theirs, ours map[string]string) map[string]string {
		if len(theirs) == 0 {
			return ours
		}
		out := make(map[string]string, len(theirs)+len(ours))
		maps.Copy(out, theirs)
		maps.Copy(out, ours)
		return out
	}
	want.SetLabels(merge(got.GetLabels(), want.GetLabels()))
	want.SetAnnotations(merge(got.GetAnnotations(), want.GetAnnotations()))
	if len(want.GetFinalizers()) == 0 {
		want.SetFinalizers(got.GetFinalizers())
	}
	if len(want.GetOwnerReferences()) == 0 {
		want.SetOwnerReferences(got.GetOwnerReferences())
	}
}

// describeKey renders namespace/name or name.
func describeKey(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// seedProject prepares a project plane: BindingNamespace labelled with the
// project (compute-manager's single mode reads a namespace's project from
// that label), a ready Location per city in LocationNamespace and a ready
// LocationBinding per city in BindingNamespace, so Workloads may use every
// city of the platform.
func seedProject(ctx context.Context, c client.Client, project string, cities []string) error {
	if err := ensureNamespace(ctx, c, LocationNamespace); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: BindingNamespace}}
	if _, err := createOrUpdate(ctx, c, ns, func() {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[projects.DefaultProjectLabel] = project
	}); err != nil {
		return fmt.Errorf("failed to label namespace %s with its project: %w", BindingNamespace, err)
	}
	for _, city := range cities {
		name := strings.ToLower(city)
		loc := &networkingv1alpha.Location{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LocationNamespace}}
		if _, err := createOrUpdate(ctx, c, loc, func() {
			loc.Spec.LocationClassName = networkingv1alpha.LocationClassDatumManaged
			loc.Spec.Topology = map[string]string{networkingv1alpha.CityCodeTopologyKey: city}
		}); err != nil {
			return fmt.Errorf("failed to create Location %s: %w", name, err)
		}
		if err := setReady(ctx, c, loc, &loc.Status.Conditions, networkingv1alpha.LocationConditionReady, "LocalPlatform",
			"cell "+CellPlane(city)+" of the local platform serves "+city); err != nil {
			return fmt.Errorf("failed to mark Location %s ready: %w", name, err)
		}
		binding := &networkingv1alpha.LocationBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: BindingNamespace}}
		if _, err := createOrUpdate(ctx, c, binding, func() {
			binding.Spec.LocationRef = networkingv1alpha.LocationReference{Namespace: LocationNamespace, Name: name}
		}); err != nil {
			return fmt.Errorf("failed to create LocationBinding %s: %w", name, err)
		}
		if err := setReady(ctx, c, binding, &binding.Status.Conditions, networkingv1alpha.LocationBindingConditionReady, "LocalPlatform",
			"the local platform binds "+city+" to every project"); err != nil {
			return fmt.Errorf("failed to mark LocationBinding %s ready: %w", name, err)
		}
	}
	return nil
}

// setReady sets a True condition through the status subresource.
func setReady(ctx context.Context, c client.Client, obj client.Object, conds *[]metav1.Condition, condType, reason, message string) error {
	base := obj.DeepCopyObject().(client.Object)
	changed := meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: obj.GetGeneration(),
	})
	if !changed {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFrom(base))
}
