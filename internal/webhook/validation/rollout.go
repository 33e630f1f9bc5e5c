package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/placement"
)

// Bounds of spec.rollout.
const (
	MaxRolloutWaves            = 64
	MaxSoakSeconds             = 7 * 24 * 3600
	MaxProgressDeadlineSeconds = 24 * 3600
)

// percentPattern is a percentage from 1% to 100%.
var percentPattern = regexp.MustCompile(`^([1-9][0-9]?|100)%$`)

// validateRollout validates spec.rollout: the strategy's own fields, and
// that every city it names is a city of a placement.
func validateRollout(w *computev1alpha.Workload, env Environment) field.ErrorList {
	r := w.Spec.Rollout
	if r == nil {
		return nil
	}
	path := field.NewPath("spec", "rollout")
	cities := workloadCities(w, env)
	var errs field.ErrorList
	switch r.Strategy {
	case "", computev1alpha.AllAtOnceCityRollout, computev1alpha.WavesCityRollout, computev1alpha.CanaryCityRollout:
	default:
		errs = append(errs, field.NotSupported(path.Child("strategy"), r.Strategy, []string{
			string(computev1alpha.AllAtOnceCityRollout), string(computev1alpha.WavesCityRollout), string(computev1alpha.CanaryCityRollout)}))
	}
	errs = append(errs, validateWaves(r, cities, path.Child("waves"))...)
	errs = append(errs, validateCanary(r, cities, path.Child("canary"))...)
	errs = append(errs, validateCityCount(r.MaxUnavailableCities, path.Child("maxUnavailableCities"))...)
	return append(errs, validateRolloutPolicy(r, path)...)
}

// workloadCities are the cities w's placements reach: the ones they name
// (cityCodes, a city-code selector) and the cities of the bound Locations
// they reach; nil when that cannot be known (offline validation of a
// placement that does not name its cities), which turns the check off.
func workloadCities(w *computev1alpha.Workload, env Environment) sets.Set[string] {
	cities := sets.New[string]()
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		named := slices.Concat(p.CityCodes, locations.SelectedCityCodes(p.LocationSelector))
		if env.SkipCityBindings && len(named) == 0 {
			return nil
		}
		cities.Insert(named...)
	}
	for _, t := range placement.Targets(w, env.Cities, nil) {
		if t.CityCode != "" {
			cities.Insert(t.CityCode)
		}
	}
	return cities
}

// validateWaves validates spec.rollout.waves: set with strategy Waves
// only, and each city of a placement in one wave at most.
func validateWaves(r *computev1alpha.WorkloadRollout, cities sets.Set[string], wp *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case r.Strategy == computev1alpha.WavesCityRollout && len(r.Waves) == 0:
		errs = append(errs, field.Required(wp, "strategy Waves needs at least one wave, e.g. waves: [{cityCodes: [DFW]}, {cityCodes: [LHR, SIN]}]"))
	case r.Strategy != computev1alpha.WavesCityRollout && len(r.Waves) > 0:
		errs = append(errs, field.Forbidden(wp, "waves may only be set with strategy Waves"))
	case len(r.Waves) > MaxRolloutWaves:
		errs = append(errs, field.TooMany(wp, len(r.Waves), MaxRolloutWaves))
	}
	inWave := map[string]int{}
	for i, wave := range r.Waves {
		cp := wp.Index(i).Child("cityCodes")
		if len(wave.CityCodes) == 0 {
			errs = append(errs, field.Required(cp, "every wave needs at least one city code"))
		}
		for j, code := range wave.CityCodes {
			switch first, dup := inWave[code]; {
			case !cityCodePattern.MatchString(code):
				errs = append(errs, field.Invalid(cp.Index(j), code, "must be a three-letter upper-case city code, e.g. DFW"))
			case dup:
				errs = append(errs, field.Invalid(cp.Index(j), code, fmt.Sprintf("city %s is already in wave %d: a city is rolled in one wave", code, first+1)))
			case cities != nil && !cities.Has(code):
				errs = append(errs, field.Invalid(cp.Index(j), code, notACity(cities, code)))
			default:
				inWave[code] = i
			}
		}
	}
	return errs
}

// validateCanary validates spec.rollout.canary: set with strategy Canary
// only, its city a city of a placement.
func validateCanary(r *computev1alpha.WorkloadRollout, cities sets.Set[string], cp *field.Path) field.ErrorList {
	c := r.Canary
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Strategy != computev1alpha.CanaryCityRollout {
		errs = append(errs, field.Forbidden(cp, "canary may only be set with strategy Canary"))
	}
	switch {
	case c.CityCode == "":
	case !cityCodePattern.MatchString(c.CityCode):
		errs = append(errs, field.Invalid(cp.Child("cityCode"), c.CityCode, "must be a three-letter upper-case city code, e.g. DFW"))
	case cities != nil && !cities.Has(c.CityCode):
		errs = append(errs, field.Invalid(cp.Child("cityCode"), c.CityCode, notACity(cities, c.CityCode)))
	}
	return append(errs, validateCityCount(c.WaveSize, cp.Child("waveSize"))...)
}

// validateRolloutPolicy validates how a rollout paces itself and what it
// does when a city fails: soakSeconds, progressDeadlineSeconds, onFailure
// and approval.
func validateRolloutPolicy(r *computev1alpha.WorkloadRollout, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := r.SoakSeconds; s != nil && (*s < 0 || *s > MaxSoakSeconds) {
		errs = append(errs, field.Invalid(path.Child("soakSeconds"), *s, fmt.Sprintf("must be between 0 and %d (7 days)", MaxSoakSeconds)))
	}
	if d := r.ProgressDeadlineSeconds; d != nil && (*d < 1 || *d > MaxProgressDeadlineSeconds) {
		errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *d, fmt.Sprintf("must be between 1 and %d (a day)", MaxProgressDeadlineSeconds)))
	}
	switch r.OnFailure {
	case "", computev1alpha.HaltOnFailure, computev1alpha.RollbackOnFailure:
	default:
		errs = append(errs, field.NotSupported(path.Child("onFailure"), r.OnFailure,
			[]string{string(computev1alpha.HaltOnFailure), string(computev1alpha.RollbackOnFailure)}))
	}
	switch r.Approval {
	case "", computev1alpha.AutomaticRolloutApproval, computev1alpha.ManualRolloutApproval:
	default:
		errs = append(errs, field.NotSupported(path.Child("approval"), r.Approval,
			[]string{string(computev1alpha.AutomaticRolloutApproval), string(computev1alpha.ManualRolloutApproval)}))
	}
	return errs
}

// notACity says that code is not a city of the Workload's placements, and
// which cities are.
func notACity(cities sets.Set[string], code string) string {
	return fmt.Sprintf("city %s is not a city of any placement; the Workload's cities: %s", code, strings.Join(sets.List(cities), ", "))
}

// validateCityCount validates a number of cities or a percentage.
func validateCityCount(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	switch {
	case v == nil:
		return nil
	case v.Type == intstr.Int && v.IntVal < 1:
		return field.ErrorList{field.Invalid(path, v.IntVal, "must be at least 1 city, or a percentage such as 50%")}
	case v.Type == intstr.String && !percentPattern.MatchString(v.StrVal):
		return field.ErrorList{field.Invalid(path, v.StrVal, "must be a number of cities, or a percentage from 1% to 100% such as 50%")}
	}
	return nil
}
