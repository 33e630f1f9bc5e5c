// Package api_test checks the v1alpha CRDs on a real kube-apiserver: the
// schema accepts and rejects objects with field-precise errors, the status
// and scale subresources work, print columns are served, and owner
// references are garbage collected by a real kube-controller-manager.
package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/citycells/compute/internal/planes"
)

var (
	cfg     *rest.Config
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	testEnv *planes.Environment
)

var (
	workloadsGVR   = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloads"}
	deploymentsGVR = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "workloaddeployments"}
	instancesGVR   = schema.GroupVersionResource{Group: "compute.datumapis.com", Version: "v1alpha", Resource: "instances"}
)

// repoRoot finds the repository root from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := planes.Start(context.Background(), planes.Options{
		Planes: []planes.PlaneSpec{{
			Name:              "api",
			ControllerManager: true,
			CRDDirs:           []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		}},
		Log: os.Stderr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to start the API plane: %v\n", err)
		return 1
	}
	defer env.Stop()
	testEnv = env
	cfg = env.Plane("api").Config()
	dyn = dynamic.NewForConfigOrDie(cfg)
	kube = kubernetes.NewForConfigOrDie(cfg)
	return m.Run()
}
