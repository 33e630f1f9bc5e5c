package validation

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sortedKeys returns the keys of m, sorted, so errors come out in a stable
// order.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sortErrors orders errors by field path, then type and detail.
func sortErrors(errs field.ErrorList) field.ErrorList {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Detail, b.Detail))
	})
	return errs
}
