// Package cellcompanions reads, in a cell, what the referenced-data gate
// and the runtime providers decide on: the companions present in a
// namespace (see api/v1alpha/referenceddata.go) and what an Instance's
// WorkloadDeployment expects. The decisions themselves are internal/referenceddata's; this
// package only observes, so the Instance controller and the simulated
// provider see the same present set.
//
// Companions are watched through a cache of their own (NewCache): the
// metadata only (a Secret's data never enters memory) of the ConfigMaps and
// Secrets that carry the referenced-data label, and nothing else. It is not
// the manager's cache because a manager that also runs the management role
// narrows Secrets in that cache to its own ends, and a cache holds one
// selection per kind.
package cellcompanions

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/referenceddata"
)

// Selector selects companions: objects that carry the referenced-data
// label with its value.
func Selector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{computev1alpha.ReferencedDataLabel: computev1alpha.ReferencedDataLabelValue})
}

// ConfigMap returns the metadata-only object of a companion ConfigMap, for
// watches and the cache.
func ConfigMap() *metav1.PartialObjectMetadata {
	return metadataOf("ConfigMap")
}

// Secret returns the metadata-only object of a companion Secret, for
// watches and the cache.
func Secret() *metav1.PartialObjectMetadata {
	return metadataOf("Secret")
}

// metadataOf returns the metadata-only object of a core kind.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return obj
}

// CacheOptions are the options of the companions' cache: the metadata of
// labelled ConfigMaps and Secrets, cluster-wide, without managed fields.
// No other kind may be read from it, and reading fails until a watch
// (source.Kind on ConfigMap or Secret) has started the kind's informer:
// controllers read it only once their watches are synced.
func CacheOptions(scheme *runtime.Scheme, mapper meta.RESTMapper) cache.Options {
	sel := Selector()
	return cache.Options{
		Scheme:                      scheme,
		Mapper:                      mapper,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			ConfigMap(): {Label: sel},
			Secret():    {Label: sel},
		},
	}
}

// NewCache returns the companions' cache of the cluster at cfg; add it to
// the manager (mgr.Add) so it runs with the manager's caches.
func NewCache(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper) (cache.Cache, error) {
	c, err := cache.New(cfg, CacheOptions(scheme, mapper))
	if err != nil {
		return nil, fmt.Errorf("failed to create the cache of referenced-data companions: %w", err)
	}
	return c, nil
}

// Present returns the companions in namespace, by name, with the content
// hash each carries ("" when it carries none). A ConfigMap counts only
// under a ConfigMap's companion name and a Secret under a Secret's, so an
// object of one kind never stands in for the other.
func Present(ctx context.Context, r client.Reader, namespace string) (map[string]string, error) {
	out := map[string]string{}
	for _, kind := range []string{referenceddata.KindConfigMap, referenceddata.KindSecret} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
		if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: Selector()}); err != nil {
			return nil, fmt.Errorf("failed to list the referenced-data %ss of namespace %s: %w", kind, namespace, err)
		}
		prefix := strings.ToLower(kind) + "."
		for _, o := range list.Items {
			if strings.HasPrefix(o.Name, prefix) {
				out[o.Name] = o.Annotations[computev1alpha.ReferencedDataHashAnnotation]
			}
		}
	}
	return out, nil
}

// DeploymentOf returns the name of the WorkloadDeployment an Instance
// belongs to: its controller's, else its deployment-name label; "" when
// it names none.
func DeploymentOf(inst *computev1alpha.Instance) string {
	if ref := metav1.GetControllerOf(inst); ref != nil && ref.Kind == computev1alpha.WorkloadDeploymentKind {
		return ref.Name
	}
	return inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
}

// ExpectedFor returns what the WorkloadDeployment of an Instance expects
// its cell to hold, unresolved while the expected set was resolved for
// another template than the deployment's; found is false when the Instance names no deployment
// or its deployment is gone. r is the manager's client: the deployments are
// in its cache already.
func ExpectedFor(ctx context.Context, r client.Reader, inst *computev1alpha.Instance) (e referenceddata.Expected, found bool, err error) {
	name := DeploymentOf(inst)
	if name == "" {
		return referenceddata.Expected{}, false, nil
	}
	wd := &computev1alpha.WorkloadDeployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, wd); err != nil {
		if apierrors.IsNotFound(err) {
			return referenceddata.Expected{}, false, nil
		}
		return referenceddata.Expected{}, false, fmt.Errorf("failed to get WorkloadDeployment %s of Instance %s: %w", name, inst.Name, err)
	}
	e = referenceddata.ExpectedOf(wd.Annotations)
	if !e.For(&wd.Spec.Template) {
		// Resolved for another template: what this one needs is not known
		// yet.
		e = referenceddata.Expected{}
	}
	return e, true, nil
}
