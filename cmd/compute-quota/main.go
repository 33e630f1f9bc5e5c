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

func main() {
	os.Exit(serving.Main(serving.Program[*quotaserver.Options]{
		Name:                 "compute-quota",
		Options:              quotaserver.NewOptions(),
		Run:                  quotaserver.Run,
		InvalidExit:          2,
		CompleteIsValidation: true,
	}, os.Args[1:], os.Stderr))
}
