// Command gendocs writes docs/cli.md, the datumctl compute command
// reference, from the command tree. Run it from the module root:
//
//	go run ./hack/gendocs
//
// internal/cli's tests fail when docs/cli.md is stale.
package main

import (
	"fmt"
	"os"

	"github.com/citycells/compute/internal/cli"
)

func main() {
	if err := os.WriteFile(cli.DocsPath, []byte(cli.GenerateDocs()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
