package cli_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/test/clitest"
	"github.com/citycells/compute/test/integration/fixtures/clilive"
)

// env is the real API server every command test of this package runs
// against; each test gets a namespace of its own.
var env *planes.Environment

// enablementPlane is a second plane whose compute entitlement the
// enablement tests change.
const enablementPlane = "enablement"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	env, err = clitest.Start(planes.PlaneSpec{Name: enablementPlane}, clilive.PlaneSpec())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	// The controllers' logs would drown the test output.
	ctrl.SetLogger(logr.Discard())
	stopControllers, err := clilive.StartControllers(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stopControllers(); err != nil {
			fmt.Fprintln(os.Stderr, "controllers:", err)
		}
	}()
	c, err := client.New(env.Plane(clilive.Plane).Config(), client.Options{Scheme: cmdutil.NewScheme()})
	if err == nil {
		err = clitest.SetEntitlement(context.Background(), c, servicesv1alpha1.EntitlementPhaseActive)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// live returns a harness on the live plane, where the real controllers
// run, in a project with grant as its quota.
func live(t *testing.T, grant clilive.Grant) *clilive.Harness {
	t.Helper()
	return clilive.New(t, env, grant)
}

// harness returns a harness on the project plane.
func harness(t *testing.T) *clitest.Harness {
	t.Helper()
	return clitest.New(t, env, clitest.ProjectPlane)
}

// main is the CLI under test.
var main clitest.Main = cli.Main
