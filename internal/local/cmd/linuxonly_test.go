//go:build linux

package cmd

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the repository's module.
const module = "github.com/citycells/compute"

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath, Dir                    string
	GoFiles, TestGoFiles, XTestGoFiles []string
	Imports                            []string
	Error                              *struct{ Err string }
	DepsErrors                         []struct{ Err string }
}

// goList runs `go list -e -json` for goos: file selection and imports, no
// compilation, so it is quick.
func goList(t *testing.T, goos string, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %v (GOOS=%s): %v\n%s", args, goos, err, ee.Stderr)
		}
		t.Fatalf("go list %v (GOOS=%s): %v", args, goos, err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
}

// guardError type-checks the guard file alone and returns the compiler's
// complaint: the message a build for another system stops with.
func guardError(t *testing.T, path string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	conf := types.Config{Error: func(err error) { msgs = append(msgs, err.Error()) }}
	_, _ = conf.Check(f.Name.Name, fset, []*ast.File{f}, nil)
	return strings.Join(msgs, "\n")
}

// The local platform is built only for Linux: for another system each of
// its packages is a guard file (and the package doc) that imports nothing,
// so the build stops at once with the guard's message instead of deep
// inside; the datumctl-compute plugin, released for Linux, macOS and
// Windows, does not depend on the platform and lists without errors.
func TestTheLocalPlatformBuildsOnlyOnLinux(t *testing.T) {
	guards := map[string]string{
		module + "/cmd/compute-local":       "main_other.go",
		module + "/internal/local/cmd":      "linuxonly.go",
		module + "/internal/local/platform": "linuxonly.go",
	}
	paths := make([]string, 0, len(guards))
	for p := range guards {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, goos := range []string{"darwin", "windows"} {
		for _, p := range goList(t, goos, paths...) {
			guard := guards[p.ImportPath]
			files := slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles)
			if extra := slices.DeleteFunc(files, func(f string) bool { return f == guard || f == "doc.go" }); len(extra) > 0 {
				t.Errorf("GOOS=%s: %s also builds %v: give each file //go:build linux", goos, p.ImportPath, extra)
			}
			if len(p.Imports) > 0 {
				t.Errorf("GOOS=%s: %s imports %v: the build would fail inside them, not at %s", goos, p.ImportPath, p.Imports, guard)
			}
			if msg := guardError(t, filepath.Join(p.Dir, guard)); !strings.Contains(msg, "runs only on Linux: see docs/local-platform.md") {
				t.Errorf("%s/%s does not stop the build with its message; the compiler says %q", p.ImportPath, guard, msg)
			}
		}
		plugin := goList(t, goos, "-deps", module+"/cmd/datumctl-compute")
		for _, p := range plugin {
			if p.Error != nil || len(p.DepsErrors) > 0 {
				t.Errorf("GOOS=%s: datumctl-compute's dependency %s: %v %v", goos, p.ImportPath, p.Error, p.DepsErrors)
			}
			if strings.HasPrefix(p.ImportPath, module+"/internal/local") || p.ImportPath == module+"/internal/planes" {
				t.Errorf("GOOS=%s: datumctl-compute depends on %s, which is Linux-only", goos, p.ImportPath)
			}
		}
		if len(plugin) == 0 {
			t.Errorf("GOOS=%s: go list -deps lists nothing for datumctl-compute", goos)
		}
	}
}
