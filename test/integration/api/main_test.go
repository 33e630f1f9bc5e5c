// Package api_test checks the v1alpha CRDs on a real kube-apiserver: the
// schema accepts and rejects objects with field-precise errors, the status
// and scale subresources work, print columns are served, and owner
// references are garbage collected by a real kube-controller-manager.
package api_test

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/integration/fixtures"
)

var (
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube kubernetes.Interface
)

var (
	workloadsGVR   = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloads"}
	deploymentsGVR = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloaddeployments"}
	instancesGVR   = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "instances"}
)

func TestMain(m *testing.M) {
	os.Exit(fixtures.Run(m, fixtures.Input{
		Planes: []planes.PlaneSpec{{Name: "api", ControllerManager: true, CRDDirs: []string{fixtures.CRDDir()}}},
		Setup: func(_ context.Context, e *fixtures.Env) error {
			cfg = e.Config("api")
			dyn = dynamic.NewForConfigOrDie(cfg)
			kube = kubernetes.NewForConfigOrDie(cfg)
			return nil
		},
	}))
}
