//go:build e2e

// Package upgrade upgrades compute under live Workloads on the real local
// platform, and downgrades it back: the platform starts from an earlier
// release's tree (its CRDs, interpreter and compute-manager, built by the
// platform from that tree), the test creates Workloads with that release,
// then swaps in the current CRDs, interpreter, catalog, RBAC and binaries
// one role at a time (platform.Upgrade), then the earlier release's again,
// and checks each time that nothing was recreated in any plane and that
// the Workloads stayed Available throughout.
//
// The earlier release is the commit COMPUTE_UPGRADE_FROM names (default
// fromRelease, the last main that landed), exported from the repository's
// own history into the tool cache once.
//
//	go test -tags e2e -count=1 ./test/e2e/upgrade/
package upgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// fromRelease is the release the upgrade starts from and the downgrade
// returns to: the last main that landed (placement by Location, the
// InstanceType catalog, suspension, Datum's template fields), before city
// failover, cell isolation and leader election. (Downgrading below the
// release that rewrote cityCodes into locationSelectors is not possible:
// an earlier schema prunes the selector.)
const fromRelease = "9b2290f45b91f9ae1fb73485a306f31e8505aad2"

// cities are the platform's cities.
var cities = []string{"DFW", "LHR"}

var (
	local *platform.Platform
	// repo is this repository; newManager the current compute-manager,
	// built from it; oldTree and oldManager the earlier release's.
	repo, newManager, oldTree, oldManager string
	project, hub                          client.Client
	cells                                 = map[string]client.Client{}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run prepares both releases and runs the tests on the platform started
// from the earlier one; it returns the exit code.
func run(m *testing.M) int {
	var err error
	if repo, err = filepath.Abs(filepath.Join("..", "..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	from := os.Getenv("COMPUTE_UPGRADE_FROM")
	if from == "" {
		from = fromRelease
	}
	oldTree, err = exportRelease(ctx, from)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir, err := os.MkdirTemp("", "compute-upgrade-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	if newManager, err = platform.BuildManager(ctx, repo, binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.MkdirAll(filepath.Join(binDir, "old"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if oldManager, err = platform.BuildManager(ctx, oldTree, filepath.Join(binDir, "old")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return serial.RunPlatform(m, platform.Config{
		Cities:   cities,
		Managers: platform.ManagersRequired,
		// The earlier release's CRDs, interpreter and compute-manager
		// (built by the platform from this tree).
		RepoDir: oldTree,
	}, 8*time.Minute, func(p *platform.Platform) error {
		local = p
		return connect()
	})
}

// exportRelease exports commit ref of this repository into the tool cache
// (once) and returns the directory.
func exportRelease(ctx context.Context, ref string) (string, error) {
	cache := os.Getenv("COMPUTE_TOOLS_DIR")
	if cache == "" {
		out, err := exec.CommandContext(ctx, "bash", filepath.Join(repo, "hack", "tools.sh"), "dir").Output()
		if err != nil {
			return "", fmt.Errorf("cannot find the tool cache (hack/tools.sh dir): %w", err)
		}
		cache = string(out[:len(out)-1])
	}
	full, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--verify", ref+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("the release to upgrade from, %s, is not in this clone's history (a shallow clone?): "+
			"fetch it (git fetch --unshallow) or name another with COMPUTE_UPGRADE_FROM: %w", ref, err)
	}
	commit := string(full[:len(full)-1])
	dir := filepath.Join(cache, "upgrade-from", commit)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir, nil
	}
	tmp := dir + ".partial"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", repo, commit, tmp))
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to export %s: %w\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// connect creates the clients of every plane.
func connect() error {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, computev1alpha.AddToScheme, networkingv1alpha.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	var err error
	if project, err = client.New(local.Config(platform.ProjectPlane(platform.DefaultProject)), client.Options{Scheme: s}); err != nil {
		return err
	}
	if hub, err = client.New(local.Config(platform.HubPlane), client.Options{Scheme: s}); err != nil {
		return err
	}
	for _, c := range local.State().Clusters {
		if cells[c.City], err = client.New(local.Config(c.Name), client.Options{Scheme: s}); err != nil {
			return err
		}
	}
	return nil
}
