package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/placement"
)

// Bounds of a Workload spec.
const (
	MaxPlacements           = 16
	MaxCityCodes            = 64
	MaxFailoverFallbacks    = 8
	MaxReplicas             = 1000
	MaxRevisionHistoryLimit = 100
)

// cityCodePattern is what a city code looks like.
var cityCodePattern = regexp.MustCompile(`^[A-Z]{3}$`)

// Environment is what validation needs to know beyond the Workload.
type Environment struct {
	// Cities are the cities bound to the Workload's namespace. Every city
	// code a placement newly names must be one of them.
	Cities locations.Cities
	// SkipCityBindings turns off the LocationBinding check, for callers
	// that cannot read the project's bindings (offline validation).
	SkipCityBindings bool
	// InstanceTypes is the plane's InstanceType catalog. The template's
	// instance type must be in it, and a new choice may not be Disabled.
	InstanceTypes catalog.Catalog
	// SkipInstanceTypes turns off the catalog check, for callers that
	// cannot read the catalog (offline validation).
	SkipInstanceTypes bool
}

// ValidateWorkloadCreate returns every reason w may not be created.
func ValidateWorkloadCreate(w *computev1alpha.Workload, env Environment) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(w.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), w.Name,
			msg+" (the Workload name labels every Instance, so it must be a DNS label)"))
	}
	errs = append(errs, validateCityRestarts(w.Annotations)...)
	return sortErrors(append(errs, validateSpec(w, nil, env)...))
}

// validateCityRestarts checks the per-city restart annotations
// (compute.datumapis.com/restartedAt.<CITY>): a city code and an RFC 3339
// time, so a typo is refused rather than silently ignored.
func validateCityRestarts(annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata", "annotations")
	for k, v := range annotations {
		city, ok := strings.CutPrefix(k, computev1alpha.CityRestartedAtAnnotationPrefix)
		if !ok {
			continue
		}
		if !cityCodePattern.MatchString(city) {
			errs = append(errs, field.Invalid(p.Key(k), k, "must end in a three-letter upper-case city code, e.g. "+computev1alpha.CityRestartedAtAnnotationPrefix+"DFW"))
		}
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, field.Invalid(p.Key(k), v, "must be an RFC 3339 time, e.g. 2026-05-01T12:00:00Z"))
		}
	}
	return errs
}

// ValidateWorkloadUpdate returns every reason old may not become w. A
// Workload being deleted, or whose spec did not change, is accepted.
func ValidateWorkloadUpdate(w, old *computev1alpha.Workload, env Environment) field.ErrorList {
	if w.DeletionTimestamp != nil {
		return nil
	}
	errs := validateCityRestarts(w.Annotations)
	if equality.Semantic.DeepEqual(w.Spec, old.Spec) {
		return sortErrors(errs)
	}
	errs = append(errs, validateSpec(w, old, env)...)
	return sortErrors(append(errs, validateImmutable(w, old)...))
}

// validateSpec validates w's spec; old is the Workload being updated, nil
// on create.
func validateSpec(w *computev1alpha.Workload, old *computev1alpha.Workload, env Environment) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if l := w.Spec.RevisionHistoryLimit; l != nil && (*l < 0 || *l > MaxRevisionHistoryLimit) {
		errs = append(errs, field.Invalid(spec.Child("revisionHistoryLimit"), *l,
			fmt.Sprintf("must be between 0 and %d", MaxRevisionHistoryLimit)))
	}
	errs = append(errs, validatePlacements(w, old, env)...)
	errs = append(errs, validateTemplate(&w.Spec.Template, w.Namespace, spec.Child("template"))...)
	errs = append(errs, validateInstanceType(w, old, env)...)
	errs = append(errs, validateSize(w, old, env)...)
	errs = append(errs, validateRollout(w, env)...)
	return errs
}

// validatePlacements validates spec.placements.
func validatePlacements(w *computev1alpha.Workload, old *computev1alpha.Workload, env Environment) field.ErrorList {
	path := field.NewPath("spec", "placements")
	var errs field.ErrorList
	switch n := len(w.Spec.Placements); {
	case n == 0:
		errs = append(errs, field.Required(path, "at least one placement is required: name the cities to run in"))
	case n > MaxPlacements:
		errs = append(errs, field.TooMany(path, n, MaxPlacements))
	}

	grandfathered := grandfatheredPlaces(old)
	seen := sets.New[string]()
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		pp := path.Index(i)
		errs = append(errs, validateItemName(p.Name, pp.Child("name"), seen, "every placement needs a name", utilvalidation.IsDNS1123Label)...)
		errs = append(errs, validateWhere(w, p, pp, grandfathered, env)...)
		errs = append(errs, validateFailover(w, p, pp.Child("failover"), grandfathered, env)...)
		errs = append(errs, validateScaleSettings(&p.ScaleSettings, pp.Child("scaleSettings"))...)
		if rs := p.RolloutStrategy; rs != nil && rs.MaxUnavailable != nil && (*rs.MaxUnavailable < 1 || *rs.MaxUnavailable > MaxReplicas) {
			errs = append(errs, field.Invalid(pp.Child("rolloutStrategy", "maxUnavailable"), *rs.MaxUnavailable,
				fmt.Sprintf("must be between 1 and %d", MaxReplicas)))
		}
	}
	return errs
}

// grandfatheredPlaces are the city codes and Location names old already
// placed in: a Workload keeps them after they are unbound.
func grandfatheredPlaces(old *computev1alpha.Workload) sets.Set[string] {
	out := sets.New[string]()
	if old == nil {
		return out
	}
	for i := range old.Spec.Placements {
		p := &old.Spec.Placements[i]
		out.Insert(p.CityCodes...)
		out.Insert(locations.SelectedCityCodes(p.LocationSelector)...)
		for _, l := range p.Locations {
			out.Insert(l.Name)
		}
		if p.Failover != nil {
			for _, l := range p.Failover.Fallbacks {
				out.Insert(l.Name)
			}
		}
	}
	return out
}

// validateFailover validates a placement's failover: its bounds, and
// fallbacks that are bound Locations (unless the Workload already named
// them) other than the placement's own, unless allowPlacementLocations.
func validateFailover(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, path *field.Path,
	grandfathered sets.Set[string], env Environment) field.ErrorList {
	f := p.Failover
	if f == nil {
		return nil
	}
	var errs field.ErrorList
	bounds := []struct {
		name     string
		v        *int32
		min, max int32
		hint     string
	}{
		{"tolerationSeconds", f.TolerationSeconds, 30, 86400, "how long a Location's cell must be unreachable before its replicas fail over; default 300"},
		{"returnAfterSeconds", f.ReturnAfterSeconds, 10, 86400, "how long a Location must be back before its fallback drains; default 60"},
		{"maxFailedOverLocations", f.MaxFailedOverLocations, 1, 64, "how many Locations of the Workload may be failed over at once; default 1"},
	}
	for _, b := range bounds {
		if b.v != nil && (*b.v < b.min || *b.v > b.max) {
			errs = append(errs, field.Invalid(path.Child(b.name), *b.v, fmt.Sprintf("must be between %d and %d: %s", b.min, b.max, b.hint)))
		}
	}
	fp := path.Child("fallbacks")
	switch n := len(f.Fallbacks); {
	case n == 0:
		return append(errs, field.Required(fp, "name at least one Location bound to the project to take the replicas: fallbacks: [{name: <location>}]"))
	case n > MaxFailoverFallbacks:
		errs = append(errs, field.TooMany(fp, n, MaxFailoverFallbacks))
	}
	errs = append(errs, validateLocations(w, f.Fallbacks, fp, grandfathered, env)...)
	if f.AllowPlacementLocations {
		return errs
	}
	only := w.DeepCopy()
	only.Spec.Placements = []computev1alpha.WorkloadPlacement{*p.DeepCopy()}
	own := sets.New[string]()
	for _, t := range placement.Targets(only, env.Cities, nil) {
		if t.Location != nil {
			own.Insert(t.Location.Name)
		}
	}
	for j, l := range f.Fallbacks {
		if own.Has(l.Name) {
			errs = append(errs, field.Invalid(fp.Index(j).Child("name"), l.Name, fmt.Sprintf(
				"Location %s is one of this placement's own Locations, so its fallback replicas would run beside its own: "+
					"name a Location the placement does not run in, or set failover.allowPlacementLocations: true", l.Name)))
		}
	}
	return errs
}

// validateWhere validates where a placement runs: exactly one of
// locations, locationSelector and the deprecated cityCodes (which admission
// rewrites into a locationSelector when they are valid).
func validateWhere(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, pp *field.Path,
	grandfathered sets.Set[string], env Environment) field.ErrorList {
	var set []string
	if len(p.Locations) > 0 {
		set = append(set, "locations")
	}
	if p.LocationSelector != nil {
		set = append(set, "locationSelector")
	}
	if len(p.CityCodes) > 0 {
		set = append(set, "cityCodes")
	}
	switch {
	case len(set) == 0:
		return field.ErrorList{field.Required(pp.Child("locations"),
			"exactly one of locations or locationSelector is required: name the Locations to run in (locations: [{name: <location>}]) "+
				"or select them (locationSelector: {matchLabels: {topology.datum.net/city-code: DFW}})")}
	case len(set) > 1:
		return field.ErrorList{field.Forbidden(pp.Child(set[1]),
			fmt.Sprintf("exactly one of locations or locationSelector may be set (cityCodes is their deprecated spelling); this placement sets %s",
				strings.Join(set, " and ")))}
	case len(p.CityCodes) > 0:
		return validateCityCodes(w, p, pp.Child("cityCodes"), grandfathered, env)
	case p.LocationSelector != nil:
		return validateLocationSelector(w, p.LocationSelector, pp.Child("locationSelector"), grandfathered, env)
	}
	return validateLocations(w, p.Locations, pp.Child("locations"), grandfathered, env)
}

// validateLocations validates the Locations a placement names: valid,
// distinct names, each bound to the project unless the Workload already
// ran there.
func validateLocations(w *computev1alpha.Workload, locs []computev1alpha.PlacementLocation, path *field.Path,
	grandfathered sets.Set[string], env Environment) field.ErrorList {
	var errs field.ErrorList
	if n := len(locs); n > MaxCityCodes {
		errs = append(errs, field.TooMany(path, n, MaxCityCodes))
	}
	bound := sets.New[string]()
	for _, l := range env.Cities.All() {
		bound.Insert(l.Ref.Name)
	}
	seen := sets.New[string]()
	for j, l := range locs {
		np := path.Index(j).Child("name")
		switch msgs := utilvalidation.IsDNS1123Subdomain(l.Name); {
		case l.Name == "":
			errs = append(errs, field.Required(np, "the name of a Location bound to the project, e.g. gcp-us-south1-a"))
		case len(msgs) > 0:
			errs = append(errs, field.Invalid(np, l.Name, strings.Join(msgs, "; ")))
		case seen.Has(l.Name):
			errs = append(errs, field.Duplicate(np, l.Name))
		case env.SkipCityBindings || grandfathered.Has(l.Name) || bound.Has(l.Name):
		default:
			errs = append(errs, field.Invalid(np, l.Name, notBoundLocationMessage(l.Name, w.Namespace, env.Cities)))
		}
		seen.Insert(l.Name)
	}
	return errs
}

// notBoundLocationMessage says that a Location is not bound and which are.
func notBoundLocationMessage(name, namespace string, cities locations.Cities) string {
	if len(cities) == 0 {
		return fmt.Sprintf("Location %s is not bound to this project: no Locations are bound yet "+
			"(no LocationBinding in namespace %s); ask your platform operator to bind one", name, namespace)
	}
	return fmt.Sprintf("Location %s is not bound to this project; bound Locations: %s", name, cities.DescribeLocations())
}

// validateLocationSelector validates a placement's locationSelector: a
// valid selector that constrains something (an empty one would match
// every Location), whose city codes, when it names some, are bound.
func validateLocationSelector(w *computev1alpha.Workload, ls *metav1.LabelSelector, path *field.Path,
	grandfathered sets.Set[string], env Environment) field.ErrorList {
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(path, "{}",
			"an empty selector would match every Location and is refused: select by topology, e.g. matchLabels: {topology.datum.net/city-code: DFW}")}
	}
	errs := metav1validation.ValidateLabelSelector(ls, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(errs) > 0 || env.SkipCityBindings {
		return errs
	}
	unbound := func(code string) bool {
		_, ok := env.Cities[code]
		return !ok && !grandfathered.Has(code)
	}
	key := computev1alpha.CityCodeTopologyLabel
	if code, ok := ls.MatchLabels[key]; ok && unbound(code) {
		errs = append(errs, field.Invalid(path.Child("matchLabels").Key(key), code, notEnabledMessage(code, w.Namespace, env.Cities)))
	}
	for i, r := range ls.MatchExpressions {
		if r.Key != key || r.Operator != metav1.LabelSelectorOpIn {
			continue
		}
		for j, code := range r.Values {
			if unbound(code) {
				errs = append(errs, field.Invalid(path.Child("matchExpressions").Index(i).Child("values").Index(j), code,
					notEnabledMessage(code, w.Namespace, env.Cities)))
			}
		}
	}
	return errs
}

// validateCityCodes validates one placement's city codes, and that each is
// bound to the project unless the Workload already used it.
func validateCityCodes(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, path *field.Path,
	grandfathered sets.Set[string], env Environment) field.ErrorList {
	var errs field.ErrorList
	switch n := len(p.CityCodes); {
	case n == 0:
		errs = append(errs, field.Required(path, "at least one city code is required, e.g. DFW"))
	case n > MaxCityCodes:
		errs = append(errs, field.TooMany(path, n, MaxCityCodes))
	}
	seen := sets.New[string]()
	for j, code := range p.CityCodes {
		cp := path.Index(j)
		switch {
		case !cityCodePattern.MatchString(code):
			errs = append(errs, field.Invalid(cp, code, "must be a three-letter upper-case city code, e.g. DFW"))
		case seen.Has(code):
			errs = append(errs, field.Duplicate(cp, code))
		case env.SkipCityBindings || grandfathered.Has(code):
		default:
			if _, ok := env.Cities[code]; !ok {
				errs = append(errs, field.Invalid(cp, code, notEnabledMessage(code, w.Namespace, env.Cities)))
			}
		}
		seen.Insert(code)
	}
	return errs
}

// notEnabledMessage says that a city is not enabled and which are.
func notEnabledMessage(code, namespace string, cities locations.Cities) string {
	if len(cities) == 0 {
		return fmt.Sprintf("city %s is not enabled for this project: no cities are enabled yet "+
			"(no LocationBinding in namespace %s); ask your platform operator to enable one", code, namespace)
	}
	return fmt.Sprintf("city %s is not enabled for this project; enabled cities: %s", code, cities.Describe())
}

// validateScaleSettings validates a placement's replica bounds and policy.
func validateScaleSettings(s *computev1alpha.HorizontalScaleSettings, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas < 0 || s.MinReplicas > MaxReplicas {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), s.MinReplicas,
			fmt.Sprintf("must be between 0 and %d", MaxReplicas)))
	}
	if m := s.MaxReplicas; m != nil {
		switch {
		case *m > MaxReplicas:
			errs = append(errs, field.Invalid(path.Child("maxReplicas"), *m, fmt.Sprintf("must be at most %d", MaxReplicas)))
		case *m < s.MinReplicas:
			errs = append(errs, field.Invalid(path.Child("maxReplicas"), *m,
				fmt.Sprintf("must be greater than or equal to minReplicas (%d)", s.MinReplicas)))
		}
	}
	// Autoscaling takes both: a ceiling and what to scale on.
	switch {
	case s.MaxReplicas != nil && len(s.Metrics) == 0:
		errs = append(errs, field.Required(path.Child("metrics"),
			"maxReplicas autoscales the placement and needs at least one metric to scale on, e.g. resource: {name: cpu, target: {averageUtilization: 70}}"))
	case s.MaxReplicas == nil && len(s.Metrics) > 0:
		errs = append(errs, field.Required(path.Child("maxReplicas"),
			"metrics autoscale the placement and need maxReplicas, the most replicas per city the autoscaler may run"))
	}
	switch s.InstanceManagementPolicy {
	case "", computev1alpha.OrderedReadyInstanceManagementPolicy, computev1alpha.ParallelInstanceManagementPolicy:
	default:
		errs = append(errs, field.NotSupported(path.Child("instanceManagementPolicy"), s.InstanceManagementPolicy,
			[]string{string(computev1alpha.OrderedReadyInstanceManagementPolicy), string(computev1alpha.ParallelInstanceManagementPolicy)}))
	}
	return append(errs, validateMetrics(s.Metrics, path.Child("metrics"))...)
}

// validateImmutable rejects changes to fields that cannot change in place.
func validateImmutable(w, old *computev1alpha.Workload) field.ErrorList {
	var errs field.ErrorList
	if oldKind, newKind := runtimeKind(&old.Spec.Template.Spec.Runtime), runtimeKind(&w.Spec.Template.Spec.Runtime); oldKind != "" && newKind != "" && oldKind != newKind {
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "spec", "runtime"), newKind,
			fmt.Sprintf("the runtime cannot change from %s to %s; create a new Workload instead", oldKind, newKind)))
	}
	oldPolicy := map[string]computev1alpha.InstanceManagementPolicyType{}
	for _, p := range old.Spec.Placements {
		oldPolicy[p.Name] = effectivePolicy(p.ScaleSettings.InstanceManagementPolicy)
	}
	for i, p := range w.Spec.Placements {
		was, ok := oldPolicy[p.Name]
		if !ok || was == effectivePolicy(p.ScaleSettings.InstanceManagementPolicy) {
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "placements").Index(i).Child("scaleSettings", "instanceManagementPolicy"),
			p.ScaleSettings.InstanceManagementPolicy,
			fmt.Sprintf("is immutable (was %s); add a new placement with the other policy instead", was)))
	}
	return errs
}

// effectivePolicy is the policy an empty value defaults to.
func effectivePolicy(p computev1alpha.InstanceManagementPolicyType) computev1alpha.InstanceManagementPolicyType {
	if p == "" {
		return computev1alpha.OrderedReadyInstanceManagementPolicy
	}
	return p
}

// runtimeKind names the runtime a spec chose: "sandbox", "virtualMachine",
// or "" for none or both.
func runtimeKind(rt *computev1alpha.InstanceRuntimeSpec) string {
	switch {
	case rt.Sandbox != nil && rt.VirtualMachine == nil:
		return "sandbox"
	case rt.VirtualMachine != nil && rt.Sandbox == nil:
		return "virtualMachine"
	}
	return ""
}

// reservedPrefixes are label key prefixes compute stamps on Instances;
// templates may not set them.
var reservedPrefixes = []string{"compute.datumapis.com/", "meta.datumapis.com/"}

// isReserved reports whether a template label key is reserved.
func isReserved(key string) bool {
	return slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(key, p) })
}
