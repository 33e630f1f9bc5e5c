// Command compute-manager is compute's controller manager. Flags choose its
// roles: --enable-management-controllers (Workload controllers and webhooks
// against project planes), --enable-cell-controllers (WorkloadDeployment and
// Instance controllers in a city cell) and --runtime-provider (what runs the
// cell's Instances: kubernetes, as Pods in the cell, or simulated, the local
// platform's stand-in). A role switched on without the
// configuration it needs makes the manager exit 1 with a message naming the
// missing flag.
package main

import (
	"os"

	"github.com/citycells/compute/internal/manager"
	"github.com/citycells/compute/internal/serving"
)

// version and commit are stamped at build time (make build:
// -ldflags "-X main.version=… -X main.commit=…") and exported as
// compute_build_info.
var (
	version = "dev"
	commit  = ""
)

func main() {
	os.Exit(serving.Main(serving.Program[*manager.Options]{
		Name:        "compute-manager",
		Version:     version,
		Commit:      commit,
		Options:     manager.NewOptions(),
		Run:         manager.Run,
		InvalidExit: 1,
	}, os.Args[1:], os.Stderr))
}
