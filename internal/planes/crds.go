package planes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// ReadCRDs reads every CustomResourceDefinition from the .yaml, .yml and
// .json files under dirs, recursively (Karmada ships its CRDs in one
// directory per group). Documents of other kinds, and partial CRDs such as
// kustomize patches without a group, are skipped. A missing directory is an
// error.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(path)) {
				return nil
			}
			found, err := readCRDFile(path)
			if err != nil {
				return err
			}
			crds = append(crds, found...)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("failed to read CRDs from %s: %w", dir, err)
		}
	}
	return crds, nil
}

// readCRDFile decodes the CRDs in one possibly multi-document file.
func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	err = EachYAMLDocument(data, func(doc []byte) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return err
		}
		if crd.Kind == "CustomResourceDefinition" && crd.Spec.Group != "" && crd.Spec.Names.Kind != "" {
			crds = append(crds, crd)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crds, nil
}

// EachYAMLDocument calls fn with every document of a multi-document YAML
// stream that is not blank, in order; it stops at the first error, the
// stream's or fn's, and returns it.
func EachYAMLDocument(data []byte, fn func(doc []byte) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
}

// installCRDs creates (or updates) crds and waits until each is established
// and every served version lists it in discovery: established alone does not
// mean a discovery-driven controller (the garbage collector) would see it.
func installCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return nil
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create apiextensions client: %w", err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		// Planes share the caller's objects; never mutate them.
		want := crd.DeepCopy()
		want.ResourceVersion = ""
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
				got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				want.ResourceVersion = got.ResourceVersion
				_, err = api.Update(ctx, want, metav1.UpdateOptions{})
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("failed to install CRD %s: %w", crd.Name, err)
		}
	}

	// Discovery is read fresh on every poll: a cached client would keep
	// answering with the resources it saw first.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create discovery client: %w", err)
	}
	pending := sets.New[string]()
	for _, crd := range crds {
		pending.Insert(crd.Name)
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		for _, crd := range crds {
			if pending.Has(crd.Name) && crdReady(ctx, api, dc, crd) {
				pending.Delete(crd.Name)
			}
		}
		if pending.Len() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRDs not established: %s: %w", strings.Join(sets.List(pending), ", "), ctx.Err())
		case <-ticker.C:
		}
	}
}

// crdGetter is the part of the CRD client crdReady needs.
type crdGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

// crdReady reports whether crd is established, its names accepted and its
// resource discoverable in every served version.
func crdReady(ctx context.Context, api crdGetter, dc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) bool {
	got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	if !crdCondition(got, apiextensionsv1.Established) || !crdCondition(got, apiextensionsv1.NamesAccepted) {
		return false
	}
	for _, v := range got.Spec.Versions {
		if !v.Served {
			continue
		}
		list, err := dc.ServerResourcesForGroupVersion(got.Spec.Group + "/" + v.Name)
		if err != nil {
			return false
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == got.Spec.Names.Plural }) {
			return false
		}
	}
	return true
}

// crdCondition reports whether a condition of crd is true.
func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// InstallCRDs creates or updates crds in the plane cfg reaches and waits
// until every one is established and discovered: the CRDs of a new release
// applied over a running plane.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	return installCRDs(ctx, cfg, crds)
}
