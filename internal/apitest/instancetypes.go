package apitest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/citycells/compute/internal/catalog"
)

// StandardInstanceTypes returns Datum's standard InstanceTypes as the
// repository publishes them (config/instancetypes/standard.yaml), for tests
// that size Instances or check a template's type. It panics when the file
// cannot be read: a broken checkout.
func StandardInstanceTypes() catalog.Catalog {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		panic("cannot locate the repository from the test binary")
	}
	file := filepath.Join(filepath.Dir(self), "..", "..", "config", "instancetypes", "standard.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		panic(fmt.Sprintf("failed to read the standard InstanceTypes: %v", err))
	}
	types, err := catalog.Decode(data)
	if err != nil {
		panic(fmt.Sprintf("failed to decode %s: %v", file, err))
	}
	return types
}
