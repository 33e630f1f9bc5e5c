package cli_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/clitest"
	"github.com/citycells/compute/internal/planes"
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
	env, err = clitest.Start(enablementPlane)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}

// harness returns a harness on the project plane.
func harness(t *testing.T) *clitest.Harness {
	t.Helper()
	return clitest.New(t, env, clitest.ProjectPlane)
}

// main is the CLI under test.
var main clitest.Main = cli.Main
