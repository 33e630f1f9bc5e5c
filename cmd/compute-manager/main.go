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
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/citycells/compute/internal/manager"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	opts := manager.NewOptions()
	fs := pflag.NewFlagSet("compute-manager", pflag.ContinueOnError)
	opts.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "compute-manager: %v\nRun compute-manager --help for usage.\n", err)
		return 2
	}
	if err := opts.Complete(fs); err != nil {
		fmt.Fprintf(os.Stderr, "compute-manager: %v\n", err)
		return 1
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "compute-manager: invalid configuration:\n%v\n", err)
		return 1
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := manager.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "compute-manager: %v\n", err)
		return 1
	}
	return 0
}
