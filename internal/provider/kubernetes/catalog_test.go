package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/apitest"
)

// testTypes is the catalog the provider's tests size Instances from:
// Datum's standard InstanceTypes.
var testTypes = apitest.StandardInstanceTypes()

// podFor builds inst's Pod sized from testTypes.
func podFor(inst *computev1alpha.Instance, ratio float64) (*corev1.Pod, error) {
	return podWithTypes(inst, testTypes, ratio)
}
