package placement

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/locations"
	"github.com/citycells/compute/internal/mirror"
	"github.com/citycells/compute/internal/names"
)

// Target is one placement × city of a Workload.
type Target struct {
	// Placement is the placement name.
	Placement string
	// CityCode is the city.
	CityCode string
	// Name is the WorkloadDeployment name of the target, whether or not it
	// gets one.
	Name string
	// Bound is set when the city may have a deployment: it is bound to the
	// project (and ready, unless KeepExisting).
	Bound bool
	// Desired is the WorkloadDeployment the target wants (filled by
	// Expand); nil when the city gets no new deployment (see Reason).
	Desired *computev1alpha.WorkloadDeployment
	// Reason and Message say why the city has no deployment or is held
	// back; empty when it is bound and ready.
	Reason, Message string
	// KeepExisting is set on a city whose Location is not ready: an existing
	// deployment is kept and updated, but none is created.
	KeepExisting bool
}

// Key names the target as "placement/CITY".
func (t *Target) Key() string { return t.Placement + "/" + t.CityCode }

// Targets returns every placement × city of w, sorted by placement name and
// city code, with whether each city is bound (cities are those bound to w's
// namespace), but without the deployments they want (see Expand).
func Targets(w *computev1alpha.Workload, cities locations.Cities) []Target {
	var out []Target
	for i := range w.Spec.Placements {
		p := &w.Spec.Placements[i]
		codes := slices.Clone(p.CityCodes)
		slices.Sort(codes)
		for _, code := range slices.Compact(codes) {
			t := Target{
				Placement: p.Name,
				CityCode:  code,
				Name:      names.WorkloadDeploymentName(w.Name, w.UID, p.Name, code),
			}
			city, bound := cities[code]
			switch {
			case !bound:
				t.Reason = computev1alpha.ReasonLocationNotBound
				t.Message = fmt.Sprintf("city %s is not bound to this project (no LocationBinding in namespace %s); bound cities: %s",
					code, w.Namespace, cities.Describe())
			case !city.Ready:
				t.Reason = computev1alpha.ReasonLocationNotReady
				t.Message = city.Message
				t.Bound, t.KeepExisting = true, true
			default:
				t.Bound = true
			}
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b Target) int {
		return cmp.Or(cmp.Compare(a.Placement, b.Placement), cmp.Compare(a.CityCode, b.CityCode))
	})
	return out
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
		t.Desired = Desired(w, p, t.CityCode, t.Name, tpl)
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

// Desired returns the WorkloadDeployment placement p of w wants in city,
// named name, running tpl (owned by the result from then on): CityTemplate
// of the Workload's template, or of the revision the city runs.
func Desired(w *computev1alpha.Workload, p *computev1alpha.WorkloadPlacement, city, name string, tpl *computev1alpha.InstanceTemplateSpec) *computev1alpha.WorkloadDeployment {
	wd := &computev1alpha.WorkloadDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: w.Namespace,
			Labels: map[string]string{
				computev1alpha.WorkloadUIDLabel:      string(w.UID),
				computev1alpha.WorkloadNameLabel:     w.Name,
				computev1alpha.PlacementNameLabel:    p.Name,
				computev1alpha.CityCodeLabel:         city,
				computev1alpha.CityCodeTopologyLabel: city,
			},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(w)},
		},
		Spec: computev1alpha.WorkloadDeploymentSpec{
			WorkloadRef:     computev1alpha.WorkloadReference{Name: w.Name, UID: w.UID},
			PlacementName:   p.Name,
			CityCode:        city,
			Template:        *tpl,
			ScaleSettings:   *p.ScaleSettings.DeepCopy(),
			RolloutStrategy: p.RolloutStrategy.DeepCopy(),
		},
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
	out := existing.DeepCopy()
	out.Labels = mirror.MergeMaps(out.Labels, desired.Labels)
	out.Annotations = mirror.MergeMaps(out.Annotations, desired.Annotations)
	if _, suspended := desired.Annotations[computev1alpha.SuspendedAnnotation]; !suspended {
		// The Workload's suspension was lifted: its deployments resume.
		delete(out.Annotations, computev1alpha.SuspendedAnnotation)
	}
	if metav1.GetControllerOfNoCopy(out) == nil {
		out.OwnerReferences = append(out.OwnerReferences, desired.OwnerReferences...)
	}
	replicas := out.Spec.Replicas
	out.Spec = *desired.Spec.DeepCopy()
	out.Spec.Replicas = replicas
	return out, !equality.Semantic.DeepEqual(existing, out)
}
