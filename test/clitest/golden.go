package clitest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is -update: rewrite golden files instead of comparing.
var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// Golden compares got with testdata/<name>.golden, or rewrites the file
// when the test runs with -update.
func Golden(t testing.TB, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file %s (run go test -update to create it): %v", path, err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
