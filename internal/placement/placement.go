package placement

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/mirror"
	"github.com/citycells/compute/internal/names"
)

// Target is one placement × Location of a Workload (or a city or Location
// a placement asks for that is not bound to the project).
type Target struct {
	// Placement is the placement name.
	Placement string
	// CityCode is the city; empty for a Location name that is not bound
	// (its city is unknown).
	CityCode string
	// Location is the Location the deployment runs in; nil for a city the
	// placement asks for that no bound Location serves.
	Location *computev1alpha.LocationReference
	// Name is the WorkloadDeployment name of the target, whether or not it
	// gets one: the name of the deployment that already runs it, else a
	// new one (see Targets).
	Name string
	// Bound is set when the Location may have a deployment: it is bound to
	// the project (and ready, unless KeepExisting).
	Bound bool
	// Desired is the WorkloadDeployment the target wants (filled by
	// Expand); nil when the Location gets no new deployment (see Reason).
	Desired *computev1alpha.WorkloadDeployment
	// Reason and Message say why the Location has no deployment or is held
	// back; empty when it is bound and ready.
	Reason, Message string
	// KeepExisting is set on a Location that is not ready: an existing
	// deployment is kept and updated, but none is created.
	KeepExisting bool
	// FailoverFor is set on a fallback's target (internal/failover): the
	// unreachable target whose replicas it runs.
	FailoverFor *Target
	// serving is set when Location is the one serving the city (the
	// city's only, or first ready, Location).
	serving bool
}

// Key names the target uniquely: KeyOf its placement, city and Location,
// and for a fallback, "/failover-for/" and the key of the target it runs
// replicas for.
func (t *Target) Key() string {
	k := KeyOf(t.Placement, t.CityCode, t.Location)
	if t.FailoverFor != nil {
		k += "/failover-for/" + t.FailoverFor.Key()
	}
	return k
}

// Label names the target for people: "placement/CITY", with the
// Location's name when the Location is not the one serving the city in
// the project (a city with two Locations).
func (t *Target) Label() string {
	l := t.Placement + "/" + t.CityCode
	switch {
	case t.Location != nil && t.CityCode == "":
		// A Location that is not bound: its city is unknown.
		return t.Placement + "/" + t.Location.Name
	case t.Location != nil && !t.serving:
		l += " (" + t.Location.Name + ")"
	}
	if t.FailoverFor != nil {
		l += " (failover for " + strings.TrimPrefix(t.FailoverFor.Label(), t.Placement+"/") + ")"
	}
	return l
}

// Fallback returns the target of a fallback deployment named name, in
// placement's Location ref of city, that runs the replicas of target of
// (internal/failover); cities are the bound cities.
func Fallback(placement, city string, ref *computev1alpha.LocationReference, cities locations.Cities, of *Target, name string) Target {
	t := Target{Placement: placement, CityCode: city, Location: ref.DeepCopy(), Bound: true, FailoverFor: of, Name: name}
	if c, ok := cities[city]; ok && ref != nil {
		t.serving = c.Location.Namespace == ref.Namespace && c.Location.Name == ref.Name
	}
	return t
}

// IsFallback reports whether wd runs the replicas of another of its
// Workload's deployments (FailoverForLabel): it is never a placement's own
// deployment.
func IsFallback(wd *computev1alpha.WorkloadDeployment) bool {
	return wd.Labels[computev1alpha.FailoverForLabel] != ""
}

// KeyOf names a placement × city × Location: "placement/CITY", then
// "/namespace/location" when there is a Location.
func KeyOf(placement, city string, location *computev1alpha.LocationReference) string {
	k := placement + "/" + city
	if location != nil {
		k += "/" + location.Namespace + "/" + location.Name
	}
	return k
}

// Targets returns every placement × Location of w, sorted by placement
// name, city code and Location, with whether each is bound (cities are
// those bound to w's namespace, with their Locations), but without the
// deployments they want (see Expand).
//
// A placement reaches the Locations it names (locations), or the bound
// Locations whose topology its selector matches (locationSelector, or
// cityCodes read as the selector CityCodesSelector makes of them). A
// Location name or a city the placement asks for that nothing bound serves
// is a target with reason LocationNotBound.
//
// existing are the namespace's WorkloadDeployments: a target already run by
// one of w's deployments keeps that deployment's name. A deployment from
// before placement by Location (no spec.locationRef) is adopted by its
// city's first target in the placement, preferring the Location that
// serves the city, so an upgrade renames and recreates nothing.
func Targets(w *computev1alpha.Workload, cities locations.Cities, existing []computev1alpha.WorkloadDeployment) []Target {
	var out []Target
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		var ts []Target
		if len(p.Locations) > 0 {
			ts = namedTargets(w, p, cities)
		} else {
			ts = selectedTargets(w, p, cities)
		}
		out = append(out, nameTargets(w, p.Name, ts, existing)...)
	}
	slices.SortStableFunc(out, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.Placement, b.Placement), cmp.Compare(a.CityCode, b.CityCode), cmp.Compare(a.Key(), b.Key()))
	})
	return out
}

// namedTargets are the targets of a placement that names its Locations.
func namedTargets(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, cities locations.Cities) []Target {
	all := cities.All()
	var out []Target
	seen := map[string]bool{}
	for _, l := range p.Locations {
		if seen[l.Name] {
			continue
		}
		seen[l.Name] = true
		found := false
		for _, bound := range all {
			if bound.Ref.Name == l.Name {
				found = true
				out = append(out, locationTarget(p.Name, bound, cities))
			}
		}
		if !found {
			out = append(out, Target{
				Placement: p.Name,
				Location:  &computev1alpha.LocationReference{Name: l.Name},
				Reason:    computev1alpha.ReasonLocationNotBound,
				Message: fmt.Sprintf("Location %s is not bound to this project (no LocationBinding in namespace %s names it); bound Locations: %s",
					l.Name, w.Namespace, cities.DescribeLocations()),
			})
		}
	}
	return out
}

// selectedTargets are the targets of a placement that selects its
// Locations: every bound Location that matches, and every city the
// selector names (topology.datum.net/city-code) that no bound Location
// serves.
func selectedTargets(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, cities locations.Cities) []Target {
	ls := Selector(p)
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if ls == nil || err != nil || sel.Empty() {
		// Admission refuses these; nothing is selected.
		return nil
	}
	out := make([]Target, 0, len(cities))
	for _, l := range cities.All() {
		if sel.Matches(labels.Set(l.Topology)) {
			out = append(out, locationTarget(p.Name, l, cities))
		}
	}
	for _, code := range locations.SelectedCityCodes(ls) {
		if _, bound := cities[code]; bound {
			continue
		}
		out = append(out, Target{
			Placement: p.Name,
			CityCode:  code,
			Reason:    computev1alpha.ReasonLocationNotBound,
			Message: fmt.Sprintf("city %s is not bound to this project (no LocationBinding in namespace %s); bound cities: %s",
				code, w.Namespace, cities.Describe()),
		})
	}
	return out
}

// locationTarget is the target of placement in the bound Location l.
func locationTarget(placement string, l locations.Location, cities locations.Cities) Target {
	t := Target{
		Placement: placement,
		CityCode:  l.CityCode,
		Location:  &computev1alpha.LocationReference{Namespace: l.Ref.Namespace, Name: l.Ref.Name},
		Bound:     true,
		serving:   cities[l.CityCode].Location == l.Ref,
	}
	if !l.Ready {
		t.Reason = computev1alpha.ReasonLocationNotReady
		t.Message = l.Message
		t.KeepExisting = true
	}
	return t
}

// nameTargets names the targets ts of one placement: after the deployment
// of w that already runs the Location, or the city's deployment from
// before Locations, or anew.
func nameTargets(w *computev1alpha.Workload, placement string, ts []Target, existing []computev1alpha.WorkloadDeployment) []Target {
	byLocation := map[computev1alpha.LocationReference]string{}
	legacy, byCity := map[string]string{}, map[string]string{}
	for i := range existing {
		wd := &existing[i]
		if wd.Spec.PlacementName != placement || !BelongsTo(wd, w.UID) || IsFallback(wd) {
			continue
		}
		if _, dup := byCity[wd.Spec.CityCode]; !dup {
			byCity[wd.Spec.CityCode] = wd.Name
		}
		if ref := wd.Spec.LocationRef; ref != nil {
			byLocation[*ref] = wd.Name
		} else if _, dup := legacy[wd.Spec.CityCode]; !dup {
			legacy[wd.Spec.CityCode] = wd.Name
		}
	}
	// The Location serving a city adopts its legacy deployment first.
	order := make([]int, 0, len(ts))
	for i := range ts {
		order = append(order, i)
	}
	serves := func(t *Target) bool { return t.serving }
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := serves(&ts[a]), serves(&ts[b])
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return cmp.Compare(ts[a].Key(), ts[b].Key())
	})
	for _, i := range order {
		t := &ts[i]
		switch {
		case t.Location == nil && byCity[t.CityCode] != "":
			// A city no longer bound: its status names the deployment
			// that goes.
			t.Name = byCity[t.CityCode]
		case t.Location == nil || t.CityCode == "":
			t.Name = names.WorkloadDeploymentName(w.Name, w.UID, placement, t.CityCode)
		case byLocation[*t.Location] != "":
			t.Name = byLocation[*t.Location]
		case legacy[t.CityCode] != "":
			t.Name = legacy[t.CityCode]
			delete(legacy, t.CityCode)
		default:
			t.Name = names.LocationDeploymentName(w.Name, w.UID, placement, t.CityCode, t.Location.Namespace, t.Location.Name)
		}
	}
	return ts
}

// Selector returns the Location selector of p: its locationSelector, or
// the one its deprecated cityCodes are rewritten into (RewriteCityCodes);
// nil when it names its Locations.
func Selector(p *computev1alpha.WorkloadPlacement) *metav1.LabelSelector {
	rewritten := *p
	RewriteCityCodes(&rewritten)
	return rewritten.LocationSelector
}

// CityCodesSelector is the locationSelector cityCodes are rewritten into
// (Datum's rewrite): every Location whose topology.datum.net/city-code is
// one of codes.
func CityCodesSelector(codes []string) *metav1.LabelSelector {
	values := slices.Clone(codes)
	slices.Sort(values)
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key:      computev1alpha.CityCodeTopologyLabel,
		Operator: metav1.LabelSelectorOpIn,
		Values:   slices.Compact(values),
	}}}
}

// cityCode is the shape of a city code.
var cityCode = regexp.MustCompile(`^[A-Z]{3}$`)

// RewriteCityCodes rewrites a placement's deprecated cityCodes into the
// locationSelector they stand for (CityCodesSelector: every Location in
// those cities) and clears them, as Datum does; admission and the Workload
// controller call it. cityCodes written over a selector of that form (a
// client that still speaks cityCodes changing a rewritten placement)
// replace it. It leaves alone a placement that also sets locations or
// another selector, or whose codes are not all well-formed, so validation
// reports them where they were written. It reports whether it rewrote.
func RewriteCityCodes(p *computev1alpha.WorkloadPlacement) bool {
	if len(p.CityCodes) == 0 || len(p.Locations) > 0 || (p.LocationSelector != nil && !isCityCodesSelector(p.LocationSelector)) {
		return false
	}
	for _, code := range p.CityCodes {
		if !cityCode.MatchString(code) {
			return false
		}
	}
	p.LocationSelector = CityCodesSelector(p.CityCodes)
	p.CityCodes = nil
	return true
}

// isCityCodesSelector reports whether ls is a selector CityCodesSelector
// makes.
func isCityCodesSelector(ls *metav1.LabelSelector) bool {
	codes := locations.SelectedCityCodes(ls)
	return len(codes) > 0 && equality.Semantic.DeepEqual(ls, CityCodesSelector(codes))
}

// Revision is what one city runs: the template of a revision (with the
// city's restart applied) and the rollout annotations its deployment
// carries.
type Revision struct {
	// Template is the city's template; nil: the Workload's own.
	Template *computev1alpha.InstanceTemplateSpec
	// Annotations are the deployment's (owned by it from then on).
	Annotations map[string]string
}

// RevisionFunc says which revision the city of a target runs.
type RevisionFunc func(t *Target) Revision

// Expand fills in the deployment each bound target of targets wants,
// building it once, with the template and annotations revisionOf gives the
// city (nil: every city runs the Workload's template), and returns targets.
func Expand(w *computev1alpha.Workload, targets []Target, revisionOf RevisionFunc) []Target {
	byName := make(map[string]*computev1alpha.WorkloadPlacement, len(w.Spec.Placements))
	for i := range w.Spec.Placements {
		if _, dup := byName[w.Spec.Placements[i].Name]; !dup {
			byName[w.Spec.Placements[i].Name] = &w.Spec.Placements[i]
		}
	}
	for i := range targets {
		t := &targets[i]
		p := byName[t.Placement]
		if !t.Bound || p == nil {
			continue
		}
		var rev Revision
		if revisionOf != nil {
			rev = revisionOf(t)
		}
		tpl := rev.Template
		if tpl == nil {
			city := CityTemplate(w, &w.Spec.Template, t.CityCode)
			tpl = &city
		}
		t.Desired = Desired(w, p, t, tpl)
		t.Desired.Annotations = withSuspension(w, rev.Annotations)
	}
	return targets
}

// withSuspension returns annotations (not modified) with w's suspension
// request added: every deployment of a suspended Workload is suspended
// (computev1alpha.SuspendedAnnotation).
func withSuspension(w *computev1alpha.Workload, annotations map[string]string) map[string]string {
	if !computev1alpha.IsSuspended(w.Annotations) {
		return annotations
	}
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[computev1alpha.SuspendedAnnotation] = computev1alpha.SuspendedAnnotationValue
	return out
}

// Desired returns the WorkloadDeployment placement p of w wants for target
// t (its name, city and Location), running tpl (owned by the result from
// then on): CityTemplate of the Workload's template, or of the revision
// the city runs.
func Desired(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, t *Target, tpl *computev1alpha.InstanceTemplateSpec) *computev1alpha.WorkloadDeployment {
	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      t.Name,
			Namespace: w.Namespace,
			Labels: map[string]string{
				computev1alpha.WorkloadUIDLabel:      string(w.UID),
				computev1alpha.WorkloadNameLabel:     w.Name,
				computev1alpha.PlacementNameLabel:    p.Name,
				computev1alpha.CityCodeLabel:         t.CityCode,
				computev1alpha.CityCodeTopologyLabel: t.CityCode,
			},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(w)},
		},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:     computev1alpha.WorkloadReference{Name: w.Name, UID: w.UID},
			PlacementName:   p.Name,
			CityCode:        t.CityCode,
			LocationRef:     t.Location.DeepCopy(),
			Template:        *tpl,
			ScaleSettings:   *p.ScaleSettings.DeepCopy(),
			RolloutStrategy: p.RolloutStrategy.DeepCopy(),
		},
	}
	if t.Location != nil && len(validation.IsValidLabelValue(t.Location.Name)) == 0 {
		wd.Labels[computev1alpha.LocationTopologyLabel] = t.Location.Name
	}
	if t.FailoverFor != nil {
		wd.Labels[computev1alpha.FailoverForLabel] = t.FailoverFor.Name
	}
	wd.SetGroupVersionKind(computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadDeploymentKind))
	return wd
}

// CityTemplate returns a copy of tpl as city runs it for w: with w's
// per-city restart of city applied when it is later than the template's
// own restart.
func CityTemplate(w *computev1alpha.Workload, tpl *computev1alpha.InstanceTemplateSpec, city string) computev1alpha.InstanceTemplateSpec {
	out := *tpl.DeepCopy()
	applyCityRestart(&out, w.Annotations[computev1alpha.CityRestartedAtAnnotationPrefix+city])
	return out
}

// applyCityRestart makes a per-city restart time the template's restartedAt
// when it is later than the template's own. An unparsable city time is
// ignored (admission rejects it); a later whole-workload restart wins.
func applyCityRestart(tpl *computev1alpha.InstanceTemplateSpec, cityRestart string) {
	at, err := time.Parse(time.RFC3339, cityRestart)
	if err != nil {
		return
	}
	own, err := time.Parse(time.RFC3339, tpl.Metadata.Annotations[computev1alpha.RestartedAtAnnotation])
	if err == nil && !at.After(own) {
		return
	}
	if tpl.Metadata.Annotations == nil {
		tpl.Metadata.Annotations = map[string]string{}
	}
	tpl.Metadata.Annotations[computev1alpha.RestartedAtAnnotation] = cityRestart
}

// OwnerReference is the controller reference a Workload puts on its
// WorkloadDeployments (and revisions): deleting the Workload lets the
// garbage collector delete them.
func OwnerReference(w *computev1alpha.Workload) metav1.OwnerReference {
	return *metav1.NewControllerRef(w, computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadKind))
}

// BelongsTo reports whether wd belongs to the Workload with uid: its
// controller reference names uid, or it has no controller and its
// spec.workloadRef.uid is uid.
func BelongsTo(wd *computev1alpha.WorkloadDeployment, uid types.UID) bool {
	if ref := metav1.GetControllerOfNoCopy(wd); ref != nil {
		return ref.UID == uid
	}
	return wd.Spec.WorkloadRef.UID == uid
}

// Merge returns existing updated to carry desired: the Workload-owned spec
// fields are replaced, spec.replicas is kept, desired labels and
// annotations are added over the existing ones, and desired's controller
// reference is added when existing has none. changed reports whether the
// result differs from existing. existing is not modified. The suspension
// annotation is the Workload's: removed when desired has none.
func Merge(existing, desired *computev1alpha.WorkloadDeployment) (merged *computev1alpha.WorkloadDeployment, changed bool) {
	out := mirror.MergeDeploymentMetadata(existing, desired)
	if metav1.GetControllerOfNoCopy(out) == nil {
		out.OwnerReferences = append(out.OwnerReferences, desired.OwnerReferences...)
	}
	replicas := out.Spec.Replicas
	out.Spec = *desired.Spec.DeepCopy()
	out.Spec.Replicas = replicas
	return out, !equality.Semantic.DeepEqual(existing, out)
}
