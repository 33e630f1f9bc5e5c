//go:build e2e

// Package platform runs the smoke tests of the local platform itself —
// etcd, kube-apiservers, kube-controller-managers and real Karmada, started
// once for the package by internal/local/platform, the same code as `compute-local
// up` — without compute-manager: the tests write WorkloadDeployments into
// the hub and their status into the cells themselves, standing in for the
// federator and the cell controllers. test/e2e/compute runs the product on
// the same platform.
//
//	go test -tags e2e -count=1 ./test/e2e/...
//
// The platform runs in a temporary state directory. TestMain stops it
// whatever happens; if the test binary dies, the platform's processes die
// with it (they are not detached). When a test fails the directory is kept
// and its path printed, so the component logs can be read.
package platform

import (
	"fmt"
	"os"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// local is the platform every test of the package runs against.
var local *platform.Platform

// Clients of the hub and of each cell, by city code.
var (
	hub   client.Client
	cells = map[string]client.Client{}
)

func TestMain(m *testing.M) {
	os.Exit(serial.RunPlatform(m, platform.Config{
		// The smoke tests exercise the platform's Karmada plumbing and
		// write WorkloadDeployment status themselves, standing in for the
		// cell controllers.
		Managers: platform.ManagersOff,
	}, 5*time.Minute, func(p *platform.Platform) error {
		local = p
		return connect()
	}))
}

// connect creates the hub and cell clients.
func connect() error {
	s := scheme()
	var err error
	if hub, err = client.New(local.Config(platform.HubPlane), client.Options{Scheme: s}); err != nil {
		return fmt.Errorf("failed to create a hub client: %w", err)
	}
	for _, c := range local.State().Clusters {
		if cells[c.City], err = client.New(local.Config(c.Name), client.Options{Scheme: s}); err != nil {
			return fmt.Errorf("failed to create a client of %s: %w", c.Name, err)
		}
	}
	return nil
}

// scheme knows core, compute and Karmada kinds.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		computev1alpha.AddToScheme,
		clusterv1alpha1.Install,
		policyv1alpha1.Install,
		workv1alpha1.Install,
		workv1alpha2.Install,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}
