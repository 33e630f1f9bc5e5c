package rollout

import (
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/revision"
)

// History is what `rollout history` shows and prints with -o json|yaml.
type History struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name and Namespace of the workload.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Current is the current revision number.
	Current int64 `json:"current"`
	// Revisions are oldest first.
	Revisions []Revision `json:"revisions"`
}

// Revision is one recorded template.
type Revision struct {
	// Number is the revision number.
	Number int64 `json:"revision"`
	// Current is set on the revision instances are rolled to.
	Current bool `json:"current"`
	// Name is the ControllerRevision.
	Name string `json:"name"`
	// TemplateHash is the hash WorkloadDeployments and Instances carry.
	TemplateHash string `json:"templateHash"`
	// RecordedAt is when the revision became current.
	RecordedAt metav1.Time `json:"recordedAt"`
	// ChangedBy names who made the change, when known.
	ChangedBy string `json:"changedBy,omitempty"`
	// ChangeCause says why, when the client said.
	ChangeCause string `json:"changeCause,omitempty"`
	// Images are the container images.
	Images []string `json:"images,omitempty"`
	// Template is the recorded template (with --revision).
	Template *computev1alpha.InstanceTemplateSpec `json:"template,omitempty"`
}

// BuildHistory turns w's revisions (oldest first) into a History; the
// highest revision is the current one.
func BuildHistory(w *computev1alpha.Workload, revs []*appsv1.ControllerRevision) (*History, error) {
	// The highest revision is current (see package revision); the
	// Workload's status may lag behind it.
	h := &History{APIVersion: cmdutil.ViewAPIVersion, Kind: "WorkloadHistory", Name: w.Name, Namespace: w.Namespace,
		Current: w.Status.CurrentRevision}
	for _, r := range revs {
		h.Current = max(h.Current, r.Revision)
	}
	for _, r := range revs {
		tpl, err := revision.Template(r)
		if err != nil {
			return nil, err
		}
		e := Revision{
			Number: r.Revision, Current: r.Revision == h.Current, Name: r.Name,
			TemplateHash: r.Labels[revision.TemplateHashLabel],
			RecordedAt:   r.CreationTimestamp,
			ChangedBy:    r.Annotations[revision.ChangedByAnnotation],
			ChangeCause:  r.Annotations[revision.ChangeCauseAnnotation],
			Images:       templateImages(tpl),
			Template:     tpl,
		}
		if at, err := time.Parse(time.RFC3339, r.Annotations[revision.RecordedAtAnnotation]); err == nil {
			e.RecordedAt = metav1.NewTime(at)
		}
		h.Revisions = append(h.Revisions, e)
	}
	return h, nil
}

// Find returns revision n, or nil.
func (h *History) Find(n int64) *Revision {
	for i := range h.Revisions {
		if h.Revisions[i].Number == n {
			return &h.Revisions[i]
		}
	}
	return nil
}

// Numbers lists the revision numbers for messages: "revisions 1, 2, 3".
func (h *History) Numbers() string {
	if len(h.Revisions) == 0 {
		return "no revisions"
	}
	parts := make([]string, 0, len(h.Revisions))
	for _, r := range h.Revisions {
		parts = append(parts, fmt.Sprint(r.Number))
	}
	return "revisions " + strings.Join(parts, ", ")
}

// templateImages lists a template's container images.
func templateImages(tpl *computev1alpha.InstanceTemplateSpec) []string {
	sb := tpl.Spec.Runtime.Sandbox
	if sb == nil {
		return nil
	}
	out := make([]string, 0, len(sb.Containers))
	for _, c := range sb.Containers {
		out = append(out, c.Image)
	}
	return out
}

// HistoryTable renders the revisions as REVISION, CURRENT, AGE, IMAGE,
// CHANGED BY, CHANGE CAUSE.
func HistoryTable(h *History, now time.Time, terminal bool) *cmdutil.Table {
	t := cmdutil.NewTable("REVISION", "CURRENT", "AGE", "IMAGE", "CHANGED BY", "CHANGE CAUSE~")
	for _, r := range h.Revisions {
		current := ""
		if r.Current {
			current = "*"
		}
		t.AddRow(fmt.Sprint(r.Number), current, cmdutil.Age(r.RecordedAt.Time, now),
			strings.Join(r.Images, ","), cmdutil.Dash(r.ChangedBy), cmdutil.Dash(r.ChangeCause))
	}
	return t
}

// RenderRevision writes one revision with its template as YAML.
func RenderRevision(w io.Writer, r *Revision, now time.Time) error {
	var b strings.Builder
	cur := ""
	if r.Current {
		cur = " (current)"
	}
	fmt.Fprintf(&b, "Revision:     %d%s\n", r.Number, cur)
	fmt.Fprintf(&b, "Recorded:     %s (%s ago)\n", r.RecordedAt.UTC().Format(time.RFC3339), cmdutil.Age(r.RecordedAt.Time, now))
	fmt.Fprintf(&b, "Template:     %s\n", r.TemplateHash)
	fmt.Fprintf(&b, "Changed by:   %s\n", cmdutil.Dash(r.ChangedBy))
	fmt.Fprintf(&b, "Change cause: %s\n", cmdutil.Dash(r.ChangeCause))
	data, err := yaml.Marshal(r.Template)
	if err != nil {
		return err
	}
	b.WriteString("\nTemplate:\n")
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}
