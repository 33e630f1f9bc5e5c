package cmdutil

import (
	"cmp"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// customColumnsPrefix starts -o custom-columns=HEADER:FIELD,...
const customColumnsPrefix = "custom-columns="

// noneValue is what a custom column shows for a field the object lacks,
// as kubectl shows it.
const noneValue = "<none>"

// FieldPath is a kubectl field expression: ".metadata.name", also
// written "{.metadata.name}" or "metadata.name".
type FieldPath struct {
	// Expr is the expression as given.
	Expr string

	jp *jsonpath.JSONPath
}

// ParseFieldPath parses expr.
func ParseFieldPath(expr string) (*FieldPath, error) {
	e := strings.TrimSpace(expr)
	e = strings.TrimSuffix(strings.TrimPrefix(e, "{"), "}")
	if e == "" {
		return nil, fmt.Errorf("empty field path")
	}
	if !strings.HasPrefix(e, ".") && !strings.HasPrefix(e, "[") {
		e = "." + e
	}
	jp := jsonpath.New("field").AllowMissingKeys(true)
	if err := jp.Parse("{" + e + "}"); err != nil {
		return nil, fmt.Errorf("%q is not a field path such as .metadata.name: %w", expr, err)
	}
	return &FieldPath{Expr: expr, jp: jp}, nil
}

// Values returns the values the path finds in doc (an object as
// unstructured JSON); none when the field is missing.
func (p *FieldPath) Values(doc map[string]any) []any {
	results, err := p.jp.FindResults(doc)
	if err != nil {
		return nil
	}
	var out []any
	for _, rs := range results {
		for _, v := range rs {
			if v.IsValid() && v.CanInterface() && !isNil(v) {
				out = append(out, v.Interface())
			}
		}
	}
	return out
}

// isNil reports whether v holds a nil map, slice, pointer or interface.
func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Text renders the values the path finds in doc for a table cell:
// several values joined with commas, <none> for a missing field.
func (p *FieldPath) Text(doc map[string]any) string {
	vals := p.Values(doc)
	if len(vals) == 0 {
		return noneValue
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// CustomColumn is one column of -o custom-columns.
type CustomColumn struct {
	// Header is the column title.
	Header string
	// Field is the field it shows.
	Field *FieldPath
}

// isCustomColumns reports whether format is custom-columns=….
func isCustomColumns(format string) bool { return strings.HasPrefix(format, customColumnsPrefix) }

// ParseCustomColumns parses the spec of -o custom-columns=SPEC:
// HEADER:FIELD pairs separated by commas.
func ParseCustomColumns(spec string) ([]CustomColumn, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("give the columns as HEADER:FIELD pairs, e.g. NAME:.metadata.name,CITY:.spec.cityCode")
	}
	parts := strings.Split(spec, ",")
	cols := make([]CustomColumn, 0, len(parts))
	for _, part := range parts {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || strings.TrimSpace(header) == "" {
			return nil, fmt.Errorf("column %q is not HEADER:FIELD (e.g. NAME:.metadata.name)", part)
		}
		p, err := ParseFieldPath(expr)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", header, err)
		}
		cols = append(cols, CustomColumn{Header: strings.TrimSpace(header), Field: p})
	}
	return cols, nil
}

// PrintCustomColumns writes obj (an object or a list) as the aligned table
// of -o custom-columns=SPEC: one row per object.
func PrintCustomColumns(w io.Writer, format string, obj runtime.Object, scheme *runtime.Scheme, noHeaders bool) error {
	objs := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if objs, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	return printCustomColumns(w, format, objs, scheme, noHeaders)
}

// printCustomColumns writes objs as the table of -o custom-columns.
func printCustomColumns(w io.Writer, format string, objs []runtime.Object, scheme *runtime.Scheme, noHeaders bool) error {
	cols, err := ParseCustomColumns(strings.TrimPrefix(format, customColumnsPrefix))
	if err != nil {
		return UsageErrorf("-o custom-columns: %v", err)
	}
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.Header
	}
	t := NewTable(headers...)
	t.NoHeaders = noHeaders
	for _, o := range objs {
		// .apiVersion and .kind columns need the kinds set.
		o = o.DeepCopyObject()
		if err := setKinds(o, scheme); err != nil {
			return err
		}
		doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = c.Field.Text(doc)
		}
		t.AddRow(cells...)
	}
	return t.Render(w, false, 0)
}

// SortByField orders items by the value field finds in each, as kubectl's
// --sort-by does: numbers by value, times by time, everything else as
// text; items without the field come last. The sort is stable: items
// with equal values keep the command's own order.
func SortByField[T any, PT interface {
	*T
	runtime.Object
}](items []T, field *FieldPath) error {
	keys := make([]any, len(items))
	for i := range items {
		doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(PT(&items[i]))
		if err != nil {
			return err
		}
		if vals := field.Values(doc); len(vals) > 0 {
			keys[i] = vals[0]
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareValues(keys[a], keys[b]) })
	sorted := make([]T, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// compareValues orders two field values; nil (missing) last.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return cmp.Compare(x, y)
		}
	}
	sa, sb := fmt.Sprint(a), fmt.Sprint(b)
	if x, err := time.Parse(time.RFC3339, sa); err == nil {
		if y, err := time.Parse(time.RFC3339, sb); err == nil {
			return x.Compare(y)
		}
	}
	return strings.Compare(sa, sb)
}

// number returns v as a float when it is a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
