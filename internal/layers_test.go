// The layers of the module, checked on every test run: no package imports
// one above it, no controller imports another controller, no package
// under internal/cli depends on a controller, the roles' wiring or a
// stand-in, and no two packages share a name.
package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/citycells/compute/"

// layers lists the module's packages by layer, lowest first; a package
// belongs to the first layer with a prefix of its path. A package may import
// its own layer and the ones below.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"API types", []string{"api/"}},
	{"pure libraries and clients", []string{
		"internal/apitest", "internal/buildinfo", "internal/catalog", "internal/cityrollout", "internal/eventcopy", "internal/exitcode", "internal/failover", "internal/features", "internal/hubclients", "internal/instanceplan", "internal/ownerref",
		"internal/lazymetrics", "internal/local/faults", "internal/locations", "internal/metricsdoc", "internal/mirror", "internal/names", "internal/ownwrites",
		"internal/patch", "internal/pendingfirst", "internal/phases",
		"internal/placement", "internal/probes", "internal/planes", "internal/projects", "internal/quota",
		"internal/referenceddata", "internal/revision", "internal/serving", "internal/status", "internal/toolchain", "internal/workloadstatus",
	}},
	{"controllers and webhooks", []string{"internal/controller/", "internal/standin/", "internal/provider/", "internal/webhook", "internal/debugapi"}},
	{"role wiring", []string{"internal/manager/"}},
	{"programs' insides", []string{"internal/manager", "internal/local/platform", "internal/local/cmd", "internal/cli", "internal/images", "internal/release"}},
	{"programs, tools and tests", []string{"cmd/", "hack/", "test/", "config/"}},
}

// layerOf returns the layer index of a module-relative package path.
func layerOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l.prefixes {
			if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, p) {
				return i
			}
		}
	}
	return -1
}

func TestNoPackageImportsALayerAboveIt(t *testing.T) {
	imports := moduleImports(t)
	if len(imports) < 20 {
		t.Fatalf("found only %d packages: is the test running from internal/?", len(imports))
	}
	for pkg, deps := range imports {
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("package %s is in no layer: add it to layers", pkg)
			continue
		}
		for _, dep := range deps {
			to := layerOf(dep)
			switch {
			case to > from:
				t.Errorf("%s (%s) imports %s (%s), a layer above it", pkg, layers[from].name, dep, layers[to].name)
			case strings.HasPrefix(pkg, "internal/controller/") && strings.HasPrefix(dep, "internal/controller/"):
				t.Errorf("controller %s imports controller %s: share through a library below both", pkg, dep)
			}
		}
	}
}

// TestTheCLIRunsNoServer holds the CLI to the client side (its test
// harness, test/clitest, lives outside it): no non-test package under
// internal/cli imports internal/manager, internal/controller or
// internal/standin, directly or through another package of the module. The
// tests that need the real controllers start them with
// test/integration/fixtures/clilive.
func TestTheCLIRunsNoServer(t *testing.T) {
	imports := moduleImports(t)
	server := func(pkg string) bool {
		for _, p := range []string{"internal/manager", "internal/controller", "internal/standin"} {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return true
			}
		}
		return false
	}
	for pkg := range imports {
		if pkg != "internal/cli" && !strings.HasPrefix(pkg, "internal/cli/") {
			continue
		}
		// via records how each dependency was reached, for the message.
		via := map[string]string{pkg: ""}
		queue := []string{pkg}
		for len(queue) > 0 {
			from := queue[0]
			queue = queue[1:]
			for _, dep := range imports[from] {
				if _, seen := via[dep]; seen {
					continue
				}
				via[dep] = from
				if server(dep) {
					path := dep
					for p := from; p != ""; p = via[p] {
						path = p + " -> " + path
					}
					t.Errorf("%s depends on %s: %s", pkg, dep, path)
					continue
				}
				queue = append(queue, dep)
			}
		}
	}
}

// sameNameAllowed are the package names several packages of the module may
// share: main (programs are never imported), and the API versions (v1alpha,
// v1alpha1, …), which every importer names after their group
// (computev1alpha, quotav1alpha1).
var sameNameAllowed = regexp.MustCompile(`^(main|v[0-9]+((alpha|beta)[0-9]*)?)$`)

// knownSameName are collisions waiting for their rename, each a package
// name and the packages that share it: the test fails when one is fixed,
// so the entry goes with the rename, and when another package joins.
var knownSameName = map[string][]string{}

// A package name says what the package is across the module: two packages
// of one name make every file importing both rename one, and a reader of
// either file guess which is meant.
func TestNoTwoPackagesShareAName(t *testing.T) {
	byName := map[string][]string{}
	for pkg, name := range modulePackages(t) {
		byName[name] = append(byName[name], pkg)
	}
	for name, pkgs := range byName {
		slices.Sort(pkgs)
		known, isKnown := knownSameName[name]
		switch {
		case sameNameAllowed.MatchString(name):
		case isKnown && !slices.Equal(pkgs, known):
			t.Errorf("package name %q: known to be shared by %s, now by %s: rename, and update knownSameName", name, strings.Join(known, ", "), strings.Join(pkgs, ", "))
		case isKnown:
		case len(pkgs) > 1:
			t.Errorf("package name %q is shared by %s: rename the less central one after what it is", name, strings.Join(pkgs, ", "))
		}
	}
	for name := range knownSameName {
		if _, ok := byName[name]; !ok {
			t.Errorf("package name %q is in knownSameName but no package has it: remove the entry", name)
		}
	}
}

// moduleImports maps every package of the module (non-test files) to the
// module packages it imports, both as module-relative paths.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	walkModule(t, func(pkg string, f *ast.File) {
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if dep, ok := strings.CutPrefix(p, module); ok {
				out[pkg] = append(out[pkg], dep)
			}
		}
	})
	return out
}

// modulePackages maps every package of the module (non-test files, whatever
// their build tags) to its name.
func modulePackages(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	walkModule(t, func(pkg string, f *ast.File) {
		if prev, ok := out[pkg]; ok && prev != f.Name.Name {
			t.Errorf("%s holds packages %s and %s", pkg, prev, f.Name.Name)
		}
		out[pkg] = f.Name.Name
	})
	return out
}

// walkModule calls fn with the imports of every non-test Go file of the
// module and the module-relative path of its package.
func walkModule(t *testing.T, fn func(pkg string, f *ast.File)) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
