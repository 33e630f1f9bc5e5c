//go:build e2e

// Package leader runs compute highly available on the local platform: two
// replicas of every compute-manager role (the project's management role,
// each city's cell role) and of compute-quota, electing their leaders
// through the Leases the shipped manifests use, under the overlays'
// leader-election RBAC (the platform runs every process as its overlay's
// ServiceAccount). It kills the management role's leader mid-rollout, as a
// node failure would, and checks what a user and an operator would see:
// the follower takes over within a lease duration, the rollout completes,
// nothing is created twice, and only the leader ever reconciled.
//
//	go test -tags e2e -count=1 ./test/e2e/leader/...
//
// TestMain stops the platform whatever happens; when a test fails the state
// directory is kept and its path printed, so the component logs can be
// read.
package leader

import (
	"fmt"
	"os"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// local is the platform every test of the package runs against.
var local *platform.Platform

// Clients of the project plane, the hub and each cell (by city code).
var (
	project client.Client
	hub     client.Client
	cells   = map[string]client.Client{}
)

// cities are the platform's cities: two are enough to count per city.
var cities = []string{"DFW", "LHR"}

func TestMain(m *testing.M) {
	os.Exit(serial.RunPlatform(m, platform.Config{
		Cities:   cities,
		Managers: platform.ManagersRequired,
		Replicas: 2,
	}, 6*time.Minute, func(p *platform.Platform) error {
		local = p
		return connect()
	}, noDenials))
}

// connect creates the clients of every plane.
func connect() error {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, computev1alpha.AddToScheme, networkingv1alpha.AddToScheme, policyv1alpha1.Install,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	var err error
	if project, err = client.New(local.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s}); err != nil {
		return fmt.Errorf("failed to create a project client: %w", err)
	}
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
