//go:build e2e

// Package compute runs compute end to end on the real local platform —
// project plane, Karmada federation plane, cells DFW, LHR and SIN — with
// compute-manager in the management role and in the cell role (with the
// simulated provider), started once for the package by internal/local/platform,
// the same code as `compute-local up`. Every compute-manager and
// compute-quota runs as the ServiceAccount its kustomize overlay creates,
// under that overlay's RBAC (the platform's default identity mode): the
// suite passing proves the RBAC is enough, rbac_test.go that it is not more
// than enough, and after the tests no component may have logged an RBAC
// denial.
//
//	go test -tags e2e -count=1 ./test/e2e/...
//
// Every test works in a project namespace of its own (with the project
// label and a LocationBinding per city, as the platform seeds "default"),
// so each has its own federation namespace and policies. Each test reads
// as what a user, or the operator looking at the planes, sees.
//
// TestMain stops the platform whatever happens; if the test binary dies
// the platform's processes die with it. When a test fails the state
// directory is kept and its path printed, so the component logs can be
// read.
package compute

import (
	"fmt"
	"os"
	"testing"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
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

// cities are the platform's cities, sorted.
var cities = []string{"DFW", "LHR", "SIN"}

func TestMain(m *testing.M) {
	os.Exit(serial.RunPlatform(m, platform.Config{
		Cities:   cities,
		Managers: platform.ManagersRequired,
	}, 6*time.Minute, func(p *platform.Platform) error {
		local = p
		return connect()
	}, noRBACDenials))
}

// connect creates the clients of every plane.
func connect() error {
	s := scheme()
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

// scheme knows core, compute, networking and Karmada kinds.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		computev1alpha.AddToScheme,
		networkingv1alpha.AddToScheme,
		clusterv1alpha1.Install,
		policyv1alpha1.Install,
		workv1alpha2.Install,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}
