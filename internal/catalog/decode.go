package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Decode reads the InstanceTypes of a multi-document YAML manifest such as
// config/instancetypes/standard.yaml (the local platform seeds it, tests
// load it); documents of other kinds are an error.
func Decode(data []byte) (Catalog, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out Catalog
	for {
		var it computev1alpha.InstanceType
		err := dec.Decode(&it)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to decode InstanceType %d: %w", len(out)+1, err)
		}
		if it.Name == "" && it.Kind == "" {
			continue // an empty document
		}
		if it.Kind != computev1alpha.InstanceTypeKind || it.APIVersion != computev1alpha.GroupVersion.String() {
			return nil, fmt.Errorf("document %d is a %s %s, not an InstanceType", len(out)+1, it.APIVersion, it.Kind)
		}
		out = append(out, it)
	}
}
