package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/citycells/compute/internal/cli"
	"github.com/citycells/compute/internal/cli/clitest"
)

func TestTheCommandReferenceIsUpToDate(t *testing.T) {
	root, err := clitest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, cli.DocsPath))
	if err != nil {
		t.Fatalf("%s is missing: run go run ./hack/gendocs (%v)", cli.DocsPath, err)
	}
	if diff := cmp.Diff(string(want), cli.GenerateDocs()); diff != "" {
		t.Errorf("%s is stale: run go run ./hack/gendocs (-file +generated):\n%s", cli.DocsPath, diff)
	}
}
