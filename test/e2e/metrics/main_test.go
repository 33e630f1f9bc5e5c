//go:build e2e

// Package metrics proves the resource metrics pipeline of the local
// platform: a cell with a real node serves metrics.k8s.io (metrics-server,
// registered with the cell's aggregator, scraping the node's kubelet), so a
// container's CPU shows in its PodMetrics, and rises when it burns CPU; a
// cell without a real node serves no metrics API at all. The platform is
// small and runs no compute-manager: the tests create Pods in the cell
// themselves.
//
//	go test -tags e2e -count=1 ./test/e2e/metrics/...
//
// It needs root and containerd, runc and the CNI plugins (make tools
// installs them), like test/e2e/runtime; without them the suite fails,
// saying what is missing.
package metrics

import (
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/citycells/compute/internal/local/platform"
	"github.com/citycells/compute/test/e2e/internal/serial"
)

// nodeCity has the real node; plainCity has none.
const (
	nodeCity  = "DFW"
	plainCity = "LHR"
)

var (
	local *platform.Platform
	// Clients of the cells, by city.
	cells = map[string]kubernetes.Interface{}
)

func TestMain(m *testing.M) {
	if err := platform.NodePrerequisites(); err != nil {
		fmt.Fprintf(os.Stderr, "the metrics suite cannot run here: %v\n", err)
		os.Exit(1)
	}
	os.Exit(serial.RunPlatform(m, platform.Config{
		Cities:   []string{nodeCity, plainCity},
		Nodes:    []string{nodeCity},
		Managers: platform.ManagersOff,
	}, 5*time.Minute, func(p *platform.Platform) error {
		local = p
		for _, city := range []string{nodeCity, plainCity} {
			cfg := rest.CopyConfig(p.Config(platform.CellPlane(city)))
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("failed to create a client of %s: %w", platform.CellPlane(city), err)
			}
			cells[city] = c
		}
		return nil
	}))
}
