//go:build e2e

package serial

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/citycells/compute/internal/local/platform"
)

// KeepEnv names the variable that, set to anything, keeps the platform's state directory (and its
// logs) after a pass too, to read what the components did.
const KeepEnv = "COMPUTE_E2E_KEEP"

// RunPlatform is the body of an end-to-end package's TestMain: it takes the
// lock, starts a local platform from cfg (StateDir and Log are filled in),
// lets connect build the package's clients, runs the tests and always stops
// the platform. The state directory is removed after a pass (unless KeepEnv
// is set) and kept, with its logs, after a failure. The checks run after the tests pass, on the
// running platform (its logs, say); one that fails fails the run.
func RunPlatform(m *testing.M, cfg platform.Config, startTimeout time.Duration, connect func(*platform.Platform) error, checks ...func(*platform.Platform) error) int {
	unlock, err := Lock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer unlock()
	dir, err := os.MkdirTemp("", "compute-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cfg.StateDir, cfg.Log = dir, os.Stderr
	// The tests' clients log what the apiservers warn of (a deprecated
	// instance type, say) through controller-runtime's logger.
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	platform, err := platform.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to start the local platform: %v\nlogs are in %s/logs\n", err, dir)
		return 1
	}
	code := 1
	defer func() {
		platform.Down()
		if code == 0 && os.Getenv(KeepEnv) == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "keeping the platform state for inspection: %s (logs in %s/logs)\n", dir, dir)
		}
	}()
	if err := connect(platform); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return code
	}
	code = m.Run()
	for _, check := range checks {
		if code != 0 {
			break
		}
		if err := check(platform); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			code = 1
		}
	}
	return code
}
