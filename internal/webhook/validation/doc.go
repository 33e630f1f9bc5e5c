// Package validation holds compute's admission rules for Workloads as pure
// functions: DefaultWorkload fills in defaults, ValidateWorkloadCreate and
// ValidateWorkloadUpdate return every violation at once as a field.ErrorList
// whose paths point at the offending field (spec.placements[0].cityCodes[1]).
// The admission webhook serves them; the CLI can run them before it sends a
// manifest.
//
// Updates ratchet: a Workload whose spec did not change is not re-validated
// (so metadata writes such as finalizer removal never fail on rules added
// later), a city code the Workload already used is not re-checked against
// the project's LocationBindings, containers whose resources, instance
// type and runtime requests did not change are not re-checked against the
// instance's size (validateSize), and a Workload being deleted is not
// validated at all.
package validation
