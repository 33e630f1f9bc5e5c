// Command compute-quota is compute's quota service for the local platform
// and tests: it plays Milo's part against one project's quota plane,
// granting ResourceClaims against ResourceGrants through AllowanceBuckets
// without ever over-granting (see internal/standin/quotaservice). It
// creates the compute ResourceRegistrations and the project's default grant
// when they are missing. Run one per project plane. Its flags and wiring
// live in internal/manager/quotaserver.
package main

import (
	"os"

	"github.com/citycells/compute/internal/manager/quotaserver"
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
	os.Exit(serving.Main(serving.Program[*quotaserver.Options]{
		Name:                 "compute-quota",
		Version:              version,
		Commit:               commit,
		Options:              quotaserver.NewOptions(),
		Run:                  quotaserver.Run,
		InvalidExit:          2,
		CompleteIsValidation: true,
	}, os.Args[1:], os.Stderr))
}
