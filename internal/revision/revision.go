package revision

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// Keys of the revision format (see the package documentation).
const (
	// TemplateHashLabel carries the template hash, as apps/v1 controllers
	// label their revisions.
	TemplateHashLabel = appsv1.ControllerRevisionHashLabelKey
	// ChangeCauseAnnotation is kubectl's change-cause annotation, copied from
	// the Workload.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	// ChangedByAnnotation names who changed the template, copied from the
	// Workload.
	ChangedByAnnotation = computev1alpha.TemplateChangedByAnnotation
	// RecordedAtAnnotation is when the revision became current.
	RecordedAtAnnotation = "compute.datumapis.com/recorded-at"
)

// DefaultHistoryLimit is how many old revisions are kept when the Workload
// does not say.
const DefaultHistoryLimit = 10

// Data is the content of a revision's data field.
type Data struct {
	// Spec holds the recorded part of the Workload spec.
	Spec DataSpec `json:"spec"`
}

// DataSpec is the recorded part of a Workload spec.
type DataSpec struct {
	// Template is the Workload's instance template.
	Template computev1alpha.InstanceTemplateSpec `json:"template"`
}

// Encode returns the data field recording tpl.
func Encode(tpl *computev1alpha.InstanceTemplateSpec) (runtime.RawExtension, error) {
	raw, err := json.Marshal(Data{Spec: DataSpec{Template: *tpl}})
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("failed to encode template: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// Template decodes the template a revision recorded.
func Template(cr *appsv1.ControllerRevision) (*computev1alpha.InstanceTemplateSpec, error) {
	raw := cr.Data.Raw
	if len(raw) == 0 && cr.Data.Object != nil {
		var err error
		if raw, err = json.Marshal(cr.Data.Object); err != nil {
			return nil, fmt.Errorf("failed to read ControllerRevision %s: %w", cr.Name, err)
		}
	}
	var d Data
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("failed to decode the template of ControllerRevision %s: %w", cr.Name, err)
	}
	return &d.Spec.Template, nil
}

// TemplateOf returns the template of the revision among revs whose template
// hash is hash, in either spelling (names.TemplateHashes); ok is false when
// none records it (trimmed from the history) or its data no longer hashes
// to hash.
func TemplateOf(revs []appsv1.ControllerRevision, hash string) (tpl *computev1alpha.InstanceTemplateSpec, ok bool) {
	for i := range revs {
		if tpl, err := Template(&revs[i]); err == nil && names.HashesOf(tpl).Names(hash) {
			return tpl, true
		}
	}
	return nil, false
}

// Spellings maps each hash a revision of revs answers to (its label, which
// a release before SHA-256 wrote in the earlier spelling, and both
// spellings of its template's hash) to the current spelling of its
// template's hash. A revision whose data cannot be read maps nothing.
func Spellings(revs []appsv1.ControllerRevision) map[string]string {
	out := make(map[string]string, 2*len(revs))
	for i := range revs {
		tpl, err := Template(&revs[i])
		if err != nil {
			continue
		}
		h := names.HashesOf(tpl)
		out[h.Current] = h.Current
		if label := revs[i].Labels[TemplateHashLabel]; h.Names(label) {
			out[label] = h.Current
		}
	}
	return out
}

// HistoryLimit returns w's revisionHistoryLimit or the default.
func HistoryLimit(w *computev1alpha.Workload) int {
	if w.Spec.RevisionHistoryLimit == nil || *w.Spec.RevisionHistoryLimit < 0 {
		return DefaultHistoryLimit
	}
	return int(*w.Spec.RevisionHistoryLimit)
}

// Sort orders revisions by revision number, oldest first (name breaks
// ties).
func Sort(revs []*appsv1.ControllerRevision) {
	slices.SortFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
}

// Current identifies the current revision.
type Current struct {
	// Name of the ControllerRevision.
	Name string
	// Number is its revision number.
	Number int64
	// TemplateHash is the hash of the template.
	TemplateHash string
}

// Changes is what to do to record the Workload's current template and trim
// the history.
type Changes struct {
	// Current is the revision of the Workload's template once the plan is
	// applied.
	Current Current
	// Create is a new revision to create, or nil.
	Create *appsv1.ControllerRevision
	// Renumber is an existing revision to patch to Current.Number (and its
	// annotations), or nil: the template returned to an earlier revision.
	Renumber *appsv1.ControllerRevision
	// Delete are old revisions beyond the history limit, oldest first.
	Delete []*appsv1.ControllerRevision
}

// Compute plans the revisions of w. existing are the revisions that belong
// to w (see Owned). now stamps RecordedAtAnnotation.
func Compute(w *computev1alpha.Workload, existing []appsv1.ControllerRevision, now time.Time) (Changes, error) {
	hashes := names.HashesOf(&w.Spec.Template)
	hash := hashes.Current
	revs := make([]*appsv1.ControllerRevision, 0, len(existing))
	for i := range existing {
		revs = append(revs, &existing[i])
	}
	Sort(revs)

	var maxNumber int64
	var match *appsv1.ControllerRevision
	taken := map[string]bool{}
	for _, r := range revs {
		taken[r.Name] = true
		maxNumber = max(maxNumber, r.Revision)
		// A revision recorded before SHA-256 is labelled with the earlier
		// spelling of the hash; it keeps that label and its number.
		if !hashes.Names(r.Labels[TemplateHashLabel]) {
			continue
		}
		tpl, err := Template(r)
		if err != nil {
			// A revision we cannot read cannot match; it ages out.
			continue
		}
		// A revision recorded before the interface defaults existed
		// matches the template read back with them.
		if equality.Semantic.DeepEqual(names.CanonicalTemplate(tpl), names.CanonicalTemplate(&w.Spec.Template)) {
			match = r
		}
	}

	var plan Changes
	switch {
	case match != nil && match.Revision == maxNumber:
		plan.Current = Current{Name: match.Name, Number: match.Revision, TemplateHash: hash}
	case match != nil:
		r := match.DeepCopy()
		r.Revision = maxNumber + 1
		r.Annotations = stamp(r.Annotations, w, now)
		plan.Renumber = r
		plan.Current = Current{Name: r.Name, Number: r.Revision, TemplateHash: hash}
	default:
		data, err := Encode(&w.Spec.Template)
		if err != nil {
			return Changes{}, err
		}
		r := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name:      freeName(w.Name, hash, taken),
				Namespace: w.Namespace,
				Labels: map[string]string{
					computev1alpha.WorkloadUIDLabel:  string(w.UID),
					computev1alpha.WorkloadNameLabel: w.Name,
					TemplateHashLabel:                hash,
				},
				Annotations:     stamp(nil, w, now),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w, computev1alpha.GroupVersion.WithKind(computev1alpha.WorkloadKind))},
			},
			Data:     data,
			Revision: maxNumber + 1,
		}
		plan.Create = r
		plan.Current = Current{Name: r.Name, Number: r.Revision, TemplateHash: hash}
	}

	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if r.Name != plan.Current.Name && r.DeletionTimestamp == nil {
			old = append(old, r)
		}
	}
	if excess := len(old) - HistoryLimit(w); excess > 0 {
		plan.Delete = old[:excess]
	}
	return plan, nil
}

// Owned returns the revisions of list that belong to w: controlled by w.
func Owned(w *computev1alpha.Workload, list []appsv1.ControllerRevision) []appsv1.ControllerRevision {
	var out []appsv1.ControllerRevision
	for i := range list {
		if ref := metav1.GetControllerOfNoCopy(&list[i]); ref != nil && ref.UID == w.UID {
			out = append(out, list[i])
		}
	}
	return out
}

// stamp returns annotations with the who/when of the revision set from w.
func stamp(annotations map[string]string, w *computev1alpha.Workload, now time.Time) map[string]string {
	out := make(map[string]string, len(annotations)+3)
	for k, v := range annotations {
		out[k] = v
	}
	delete(out, ChangeCauseAnnotation)
	delete(out, ChangedByAnnotation)
	if v := w.Annotations[ChangeCauseAnnotation]; v != "" {
		out[ChangeCauseAnnotation] = v
	}
	if v := w.Annotations[ChangedByAnnotation]; v != "" {
		out[ChangedByAnnotation] = v
	}
	out[RecordedAtAnnotation] = now.UTC().Format(time.RFC3339)
	return out
}

// freeName returns "<workload>-<hash>", or with "-<n>" appended when a
// revision of another template already holds the name.
func freeName(workload, hash string, taken map[string]bool) string {
	// Keep names within the 253 characters of a DNS subdomain.
	base := workload
	if limit := 253 - len(hash) - 8; len(base) > limit {
		base = base[:limit]
	}
	name := base + "-" + hash
	for n := 1; taken[name]; n++ {
		name = base + "-" + hash + "-" + strconv.Itoa(n)
	}
	return name
}
