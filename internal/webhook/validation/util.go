package validation

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
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

// validateName reports name at p invalid once for each message check (one
// of the utilvalidation.Is… functions) has about it.
func validateName(name string, p *field.Path, check func(string) []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range check(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateItemName validates the name of an item of a list whose names are
// unique: set (required says what to name), not in seen, and valid by
// check. seen gains the name.
func validateItemName(name string, p *field.Path, seen sets.Set[string], required string, check func(string) []string) field.ErrorList {
	defer seen.Insert(name)
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, required)}
	case seen.Has(name):
		return field.ErrorList{field.Duplicate(p, name)}
	}
	return validateName(name, p, check)
}

// maxItems reports a list at p of n items, more than limit allows.
func maxItems(p *field.Path, n, limit int) field.ErrorList {
	if n > limit {
		return field.ErrorList{field.TooMany(p, n, limit)}
	}
	return nil
}
