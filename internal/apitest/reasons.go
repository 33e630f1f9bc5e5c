// Package apitest reads the compute API's declarations from its source, so
// tests can check that tables keyed by API constants (the blocking-reason
// priority, the QuotaGranted status of each reason) cover every constant
// the API declares — a new reason added to the API without a place in those
// tables fails their tests.
package apitest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Reasons returns the condition reasons api/v1alpha declares (in any of
// its files), keyed by the
// first line of the doc comment of the const block that declares them
// ("QuotaGranted reasons.", …), each block's values in declaration order.
// Every exported constant whose name starts with "Reason" counts.
func Reasons() (map[string][]string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("cannot locate the api package from the test binary")
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "..", "api", "v1alpha", "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(filepath.Base(file), "zz_generated") {
			continue
		}
		if err := readReasons(file, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readReasons adds the reasons file declares to out, by block.
func readReasons(file string, out map[string][]string) error {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		return fmt.Errorf("failed to parse %s: %w", file, err)
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		block := ""
		if gd.Doc != nil {
			block = strings.SplitN(strings.TrimSpace(gd.Doc.Text()), "\n", 2)[0]
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return fmt.Errorf("%s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					return err
				}
				out[block] = append(out[block], v)
			}
		}
	}
	return nil
}

// AllReasons returns every reason api/v1alpha declares, whatever its block.
func AllReasons() ([]string, error) {
	blocks, err := Reasons()
	if err != nil {
		return nil, err
	}
	var all []string
	for _, rs := range blocks {
		all = append(all, rs...)
	}
	return all, nil
}
