//go:build e2e

// Package runtime runs compute end to end on a cell with a real node: the
// local platform's DFW cell gets containerd, runc, the CNI bridge, kubelet
// and kube-scheduler, and its compute-manager runs the Kubernetes runtime
// provider, so every Instance is a Pod running the demo image from the
// platform's registry and the tests reach it with HTTP from this machine.
// LHR is a second cell, simulated, for rollouts across cities.
//
//	go test -tags e2e -count=1 ./test/e2e/runtime/...
//
// It needs root and containerd, runc and the CNI plugins (make tools
// installs them); without them the platform does not start and the suite
// fails, saying what is missing.
package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// city has the real node; every test deploys there. simulatedCity is a
// second city without a node (the simulated provider runs its instances),
// for what needs two cities: a rollout in waves. Tests name the city they
// deploy to, and their namespaces are bound to it alone.
const (
	city          = "DFW"
	simulatedCity = "LHR"
)

var (
	local *platform.Platform
	// Clients of the project plane, the hub and the DFW cell.
	project, hub, cell client.Client
	// cellsets are clientsets of both cells, by city.
	cellsets = map[string]kubernetes.Interface{}
)

func TestMain(m *testing.M) {
	if err := platform.NodePrerequisites(); err != nil {
		fmt.Fprintf(os.Stderr, "the real-node suite cannot run here: %v\n", err)
		os.Exit(1)
	}
	os.Exit(serial.RunPlatform(m, platform.Config{
		Cities:   []string{city, simulatedCity},
		Nodes:    []string{city},
		Managers: platform.ManagersRequired,
	}, 6*time.Minute, func(p *platform.Platform) error {
		local = p
		s := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, computev1alpha.AddToScheme, networkingv1alpha.AddToScheme} {
			if err := add(s); err != nil {
				return err
			}
		}
		var err error
		for plane, c := range map[string]*client.Client{
			platform.ProjectPlane(platform.DefaultProject): &project, platform.HubPlane: &hub, platform.CellPlane(city): &cell,
		} {
			if *c, err = client.New(p.Config(plane), client.Options{Scheme: s}); err != nil {
				return fmt.Errorf("failed to create a client of %s: %w", plane, err)
			}
		}
		for _, c := range []string{city, simulatedCity} {
			if cellsets[c], err = kubernetes.NewForConfig(p.Config(platform.CellPlane(c))); err != nil {
				return fmt.Errorf("failed to create a client of %s: %w", platform.CellPlane(c), err)
			}
		}
		return nil
	}, downLeavesNothing))
}

// downLeavesNothing stops the platform and checks what its node leaves on
// this machine: no container runc knows, no containerd shim, no mount under
// the node's directory, no bridge.
func downLeavesNothing(p *platform.Platform) error {
	nodes := p.State().Nodes
	p.Down()
	var problems []string
	for _, n := range nodes {
		if out, err := exec.Command("runc", "--root", n.RuncRoot, "list", "--quiet").CombinedOutput(); err == nil && strings.TrimSpace(string(out)) != "" {
			problems = append(problems, "runc still lists containers: "+strings.Join(strings.Fields(string(out)), ", "))
		}
		if _, err := os.Stat("/sys/class/net/" + n.Bridge); err == nil {
			problems = append(problems, "the bridge "+n.Bridge+" is still there")
		}
		if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mounts), n.Dir) {
			problems = append(problems, "something is still mounted under "+n.Dir)
		}
		if out, err := exec.Command("pgrep", "-f", "containerd-shim.*"+n.Socket).Output(); err == nil && len(out) > 0 {
			problems = append(problems, "containerd shims still run: "+strings.Join(strings.Fields(string(out)), ", "))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("down left behind: %s", strings.Join(problems, "; "))
	}
	return nil
}
