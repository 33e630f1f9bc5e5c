// Command compute-quota is compute's quota service for the local platform
// and tests: it plays Milo's part against one project's quota plane,
// granting ResourceClaims against ResourceGrants through AllowanceBuckets
// without ever over-granting (see internal/standin/quotaservice). It
// creates the compute ResourceRegistrations and the project's default grant
// when they are missing. Run one per project plane. Its flags and wiring
// live in internal/manager/quotaserver.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/citycells/compute/internal/manager/quotaserver"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	opts := quotaserver.NewOptions()
	fs := pflag.NewFlagSet("compute-quota", pflag.ContinueOnError)
	opts.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "compute-quota: %v\nRun compute-quota --help for usage.\n", err)
		return 2
	}
	if err := opts.Complete(fs); err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: invalid configuration:\n%v\n", err)
		return 2
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: invalid configuration:\n%v\n", err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := quotaserver.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "compute-quota: %v\n", err)
		return 1
	}
	return 0
}
