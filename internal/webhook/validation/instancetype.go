package validation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
)

// DefaultDeprecationGracePeriod is how long an InstanceType stays
// Deprecated before it may be Disabled: thirty days, a billing month for the
// developers using it to move to the replacement. compute-manager's
// --instance-type-deprecation-grace-period changes it (tests shorten it).
const DefaultDeprecationGracePeriod = 30 * 24 * time.Hour

// InstanceTypeEnvironment is what InstanceType validation needs beyond the
// object: the other types of the plane, the grace period and the time.
type InstanceTypeEnvironment struct {
	// Types are the InstanceTypes the plane serves (the one validated may
	// be among them; it is skipped).
	Types catalog.Catalog
	// GracePeriod is the minimum time between status.deprecatedAt and
	// Disabled; zero or less turns the check off.
	GracePeriod time.Duration
	// Now is the admission time.
	Now time.Time
}

var (
	phasePath       = field.NewPath("spec", "lifecycle", "phase")
	replacementPath = field.NewPath("spec", "lifecycle", "replacementInstanceType")
)

// ValidateInstanceTypeCreate returns every reason it may not be created: a
// new type is Active, sized, and any replacement it names exists, is Active
// and is not itself.
func ValidateInstanceTypeCreate(it *computev1alpha.InstanceType, env InstanceTypeEnvironment) field.ErrorList {
	errs := validateInstanceTypeSpec(it, true, env)
	if p := it.Spec.Lifecycle.Phase; p != computev1alpha.InstanceTypePhaseActive {
		errs = append(errs, field.Invalid(phasePath, p, "new instance types must be created in Active phase"))
	}
	return sortErrors(errs)
}

// ValidateInstanceTypeUpdate returns every reason old may not become it: cpu
// and memory never change, the phase only moves forward one step, a type
// leaves Active only with an existing Active replacement and when no other
// live type names it as theirs, and it is Disabled only once the grace
// period has passed since status.deprecatedAt. A spec that did not change is
// accepted.
func ValidateInstanceTypeUpdate(it, old *computev1alpha.InstanceType, env InstanceTypeEnvironment) field.ErrorList {
	if it.DeletionTimestamp != nil || equality.Semantic.DeepEqual(it.Spec, old.Spec) {
		return nil
	}
	// A replacement already stored was checked when it was set, and cannot
	// be deleted or leave Active while this type is live.
	changed := it.Spec.Lifecycle.ReplacementInstanceType != old.Spec.Lifecycle.ReplacementInstanceType
	errs := validateInstanceTypeSpec(it, changed, env)
	res := field.NewPath("spec", "resources")
	if old.Spec.Resources.CPU.Cmp(it.Spec.Resources.CPU) != 0 {
		errs = append(errs, field.Forbidden(res.Child("cpu"), "cpu is immutable"))
	}
	if old.Spec.Resources.Memory.Cmp(it.Spec.Resources.Memory) != 0 {
		errs = append(errs, field.Forbidden(res.Child("memory"), "memory is immutable"))
	}
	from, to := old.Spec.Lifecycle.Phase, it.Spec.Lifecycle.Phase
	if from == to {
		return sortErrors(errs)
	}
	if next, ok := nextPhase[from]; !ok || next != to {
		errs = append(errs, field.Forbidden(phasePath, "lifecycle progression only allows Active -> Deprecated -> Disabled"))
	}
	if from == computev1alpha.InstanceTypePhaseActive {
		if refs := referrers(it.Name, env.Types); len(refs) > 0 {
			errs = append(errs, field.Forbidden(phasePath, fmt.Sprintf(
				"cannot be moved out of Active while %s still reference it as a replacement", strings.Join(refs, ", "))))
		}
	}
	if from == computev1alpha.InstanceTypePhaseDeprecated && to == computev1alpha.InstanceTypePhaseDisabled {
		errs = append(errs, validateGracePeriod(old, env)...)
	}
	return sortErrors(errs)
}

// ValidateInstanceTypeDelete refuses to delete a type another live (not
// Disabled) type names as its replacement.
func ValidateInstanceTypeDelete(it *computev1alpha.InstanceType, env InstanceTypeEnvironment) field.ErrorList {
	refs := referrers(it.Name, env.Types)
	if len(refs) == 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"), fmt.Sprintf(
		"cannot be deleted while %s still reference it as a replacement", strings.Join(refs, ", ")))}
}

// nextPhase is the one phase each phase may move to.
var nextPhase = map[computev1alpha.InstanceTypeLifecyclePhase]computev1alpha.InstanceTypeLifecyclePhase{
	computev1alpha.InstanceTypePhaseActive:     computev1alpha.InstanceTypePhaseDeprecated,
	computev1alpha.InstanceTypePhaseDeprecated: computev1alpha.InstanceTypePhaseDisabled,
}

// validateInstanceTypeSpec checks the sizes and the replacement; the
// replacement's existence only when checkReplacement.
func validateInstanceTypeSpec(it *computev1alpha.InstanceType, checkReplacement bool, env InstanceTypeEnvironment) field.ErrorList {
	var errs field.ErrorList
	res := field.NewPath("spec", "resources")
	if cpu := it.Spec.Resources.CPU; cpu.Sign() <= 0 {
		errs = append(errs, field.Invalid(res.Child("cpu"), cpu.String(), "must be greater than 0"))
	}
	if mem := it.Spec.Resources.Memory; mem.Sign() <= 0 {
		errs = append(errs, field.Invalid(res.Child("memory"), mem.String(), "must be greater than 0"))
	}
	rep := it.Spec.Lifecycle.ReplacementInstanceType
	switch {
	case rep == "" && it.Spec.Lifecycle.Phase != computev1alpha.InstanceTypePhaseActive:
		errs = append(errs, field.Required(replacementPath, "replacementInstanceType must be set when phase is Deprecated or Disabled"))
	case rep == "":
	case rep == it.Name:
		errs = append(errs, field.Invalid(replacementPath, rep, "cannot be self-referential"))
	case checkReplacement:
		switch r := findExact(env.Types, rep); {
		case r == nil:
			errs = append(errs, field.Invalid(replacementPath, rep, "references a non-existent instance type"))
		case r.Spec.Lifecycle.Phase != computev1alpha.InstanceTypePhaseActive:
			errs = append(errs, field.Invalid(replacementPath, rep, "replacementInstanceType must be Active"))
		}
	}
	return errs
}

// validateGracePeriod refuses Disabled until the grace period has passed
// since old was deprecated.
func validateGracePeriod(old *computev1alpha.InstanceType, env InstanceTypeEnvironment) field.ErrorList {
	if env.GracePeriod <= 0 {
		return nil
	}
	at := old.Status.DeprecatedAt
	if at == nil {
		return field.ErrorList{field.Forbidden(phasePath,
			"cannot be disabled: deprecation time is not recorded (status.deprecatedAt); wait for the InstanceType controller to record it")}
	}
	if allowed := at.Add(env.GracePeriod); env.Now.Before(allowed) {
		return field.ErrorList{field.Forbidden(phasePath, fmt.Sprintf(
			"cannot be disabled until %s after deprecation: deprecated at %s, may be disabled from %s",
			env.GracePeriod, at.UTC().Format(time.RFC3339), allowed.UTC().Format(time.RFC3339)))}
	}
	return nil
}

// referrers returns the sorted names of the live (not Disabled) types other
// than name that name it as their replacement.
func referrers(name string, types catalog.Catalog) []string {
	var out []string
	for i := range types {
		t := &types[i]
		if t.Name != name && t.Spec.Lifecycle.ReplacementInstanceType == name &&
			t.Spec.Lifecycle.Phase != computev1alpha.InstanceTypePhaseDisabled {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// findExact returns the type called exactly name (replacements are object
// names, never retired spellings).
func findExact(types catalog.Catalog, name string) *computev1alpha.InstanceType {
	for i := range types {
		if types[i].Name == name {
			return &types[i]
		}
	}
	return nil
}

// validateInstanceType checks the instance type a Workload's template
// names against the catalog: it must exist (a retired spelling counts as
// its replacement) and a Workload may not newly choose a Disabled type. A
// Workload keeping the type it already had is not refused, so one on a
// type disabled since can still be scaled and changed.
func validateInstanceType(w, old *computev1alpha.Workload, env Environment) field.ErrorList {
	p := field.NewPath("spec", "template", "spec", "runtime", "resources", "instanceType")
	name := w.Spec.Template.Spec.Runtime.Resources.InstanceType
	if name == "" {
		return field.ErrorList{field.Required(p, "an instance type is required, e.g. "+catalog.DefaultInstanceType)}
	}
	kept := old != nil && catalog.Canonical(old.Spec.Template.Spec.Runtime.Resources.InstanceType) == catalog.Canonical(name)
	if env.SkipInstanceTypes || kept {
		return nil
	}
	t := env.InstanceTypes.Find(name)
	switch {
	case t == nil && len(env.InstanceTypes.Names()) == 0:
		return field.ErrorList{field.Invalid(p, name, "this control plane offers no instance types; the operator publishes them as InstanceType objects (config/instancetypes)")}
	case t == nil:
		return field.ErrorList{field.NotSupported(p, name, env.InstanceTypes.Names())}
	case t.Spec.Lifecycle.Phase == computev1alpha.InstanceTypePhaseDisabled:
		return field.ErrorList{field.Forbidden(p, catalog.DisabledMessage(t.Name, t.Spec.Lifecycle.ReplacementInstanceType))}
	}
	return nil
}

// InstanceTypeWarnings are the admission warnings about w's instance type:
// a Deprecated type (naming the replacement), a retired spelling, and, on an
// update (old set) that keeps its type, a type the catalog lacks — admitted,
// so that a plane upgraded before its InstanceTypes were published keeps
// serving the Workloads it has.
func InstanceTypeWarnings(w, old *computev1alpha.Workload, env Environment) []string {
	name := w.Spec.Template.Spec.Runtime.Resources.InstanceType
	var out []string
	if catalog.IsAlias(name) {
		out = append(out, fmt.Sprintf("spec.template.spec.runtime.resources.instanceType: %q is a deprecated spelling of %q", name, catalog.Canonical(name)))
	}
	t := env.InstanceTypes.Find(name)
	switch {
	case t != nil && t.Spec.Lifecycle.Phase == computev1alpha.InstanceTypePhaseDeprecated:
		out = append(out, catalog.DeprecatedMessage(t.Name, t.Spec.Lifecycle.ReplacementInstanceType))
	case t == nil && name != "" && !env.SkipInstanceTypes && old != nil &&
		catalog.Canonical(old.Spec.Template.Spec.Runtime.Resources.InstanceType) == catalog.Canonical(name):
		out = append(out, fmt.Sprintf("spec.template.spec.runtime.resources.instanceType: %q is not in this control plane's InstanceType catalog; "+
			"the workload keeps its running instances, but new ones cannot be sized until the operator publishes the type", name))
	}
	return out
}
