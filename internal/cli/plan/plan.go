// Package plan describes what applying a Workload spec changes, for the
// confirmation `deploy` shows and the summary `rollout undo` prints: the
// cities added and removed, replicas per city, and every template field
// that changes, named the way users think of them (image, env FOO,
// instance type).
package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/locations"
)

// Change is one line of a plan.
type Change struct {
	// Op is "+" (added), "-" (removed) or "~" (changed).
	Op string `json:"op"`
	// Text describes the change.
	Text string `json:"text"`
}

// String renders the change as "~ image: a → b".
func (c Change) String() string { return c.Op + " " + c.Text }

// Diff is what applying a spec changes.
type Diff struct {
	// New is set when the workload does not exist yet.
	New bool `json:"new"`
	// Changes are the differences, cities first, then the template.
	Changes []Change `json:"changes,omitempty"`
	// TemplateChanged is set when the template changes: instances are
	// replaced.
	TemplateChanged bool `json:"templateChanged"`
	// Instances is the number of instances wanted once applied.
	Instances int32 `json:"instances"`
}

// Empty reports whether nothing changes.
func (p Diff) Empty() bool { return !p.New && len(p.Changes) == 0 }

// Compute returns the plan that turns old into desired; old nil means the
// workload is new.
func Compute(old, desired *computev1alpha.WorkloadSpec) Diff {
	p := Diff{New: old == nil, Instances: instances(desired)}
	if old == nil {
		return p
	}
	p.Changes = append(p.Changes, cityChanges(old, desired)...)
	p.Changes = append(p.Changes, placementChanges(old, desired)...)
	tpl := fieldChanges(flatten("", readable(toJSON(old.Template))), flatten("", readable(toJSON(desired.Template))), templateLabel(desired))
	p.TemplateChanged = len(tpl) > 0
	p.Changes = append(p.Changes, tpl...)
	if a, b := limit(old), limit(desired); a != b {
		p.Changes = append(p.Changes, Change{"~", fmt.Sprintf("revision history limit: %s → %s", a, b)})
	}
	return p
}

// instances counts the instances spec wants.
func instances(spec *computev1alpha.WorkloadSpec) int32 {
	var n int32
	for _, p := range spec.Placements {
		n += p.ScaleSettings.MinReplicas * int32(len(Places(&p)))
	}
	return n
}

// Places names where a placement runs, for people: "city DFW" for each
// city it names (cityCodes, a selector on topology.datum.net/city-code),
// "Location NAME" for each Location it names, or "Locations matching
// SELECTOR" for a selector on other topology. A city counts once even when
// two of the project's Locations serve it.
func Places(p *computev1alpha.WorkloadPlacement) []string {
	codes := slices.Concat(p.CityCodes, locations.SelectedCityCodes(p.LocationSelector))
	out := make([]string, 0, len(codes)+len(p.Locations)+1)
	slices.Sort(codes)
	for _, c := range slices.Compact(codes) {
		out = append(out, "city "+c)
	}
	for _, l := range p.Locations {
		out = append(out, "Location "+l.Name)
	}
	if len(out) == 0 && p.LocationSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.LocationSelector); err == nil {
			out = append(out, "Locations matching "+sel.String())
		}
	}
	return out
}

// cityReplicas maps "placement/city" to the replicas wanted there.
func cityReplicas(spec *computev1alpha.WorkloadSpec) map[[2]string]int32 {
	out := map[[2]string]int32{}
	for _, p := range spec.Placements {
		for _, c := range Places(&p) {
			out[[2]string{p.Name, c}] = p.ScaleSettings.MinReplicas
		}
	}
	return out
}

// cityChanges lists cities added, removed and rescaled.
func cityChanges(old, desired *computev1alpha.WorkloadSpec) []Change {
	before, after := cityReplicas(old), cityReplicas(desired)
	multi := len(old.Placements) > 1 || len(desired.Placements) > 1
	label := func(k [2]string) string {
		if multi {
			return k[1] + " (placement " + k[0] + ")"
		}
		return k[1]
	}
	keys := make([][2]string, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][1] != keys[j][1] {
			return keys[i][1] < keys[j][1]
		}
		return keys[i][0] < keys[j][0]
	})
	var out []Change
	for _, k := range keys {
		b, had := before[k]
		a, has := after[k]
		switch {
		case !had:
			out = append(out, Change{"+", fmt.Sprintf("%s: %s", label(k), cmdutil.Plural(int(a), "instance", "instances"))})
		case !has:
			out = append(out, Change{"-", fmt.Sprintf("%s: its %s are removed", label(k), cmdutil.Plural(int(b), "instance", "instances"))})
		case a != b:
			out = append(out, Change{"~", fmt.Sprintf("%s: %d → %d instances", label(k), b, a)})
		}
	}
	return out
}

// placementChanges lists changes of placement settings other than cities
// and minReplicas.
func placementChanges(old, desired *computev1alpha.WorkloadSpec) []Change {
	byName := map[string]*computev1alpha.WorkloadPlacement{}
	for i := range old.Placements {
		byName[old.Placements[i].Name] = &old.Placements[i]
	}
	var out []Change
	for i := range desired.Placements {
		n := &desired.Placements[i]
		o, ok := byName[n.Name]
		if !ok {
			continue
		}
		if a, b := maxReplicas(o), maxReplicas(n); a != b {
			out = append(out, Change{"~", fmt.Sprintf("placement %s: max replicas %s → %s", n.Name, a, b)})
		}
		if a, b := policy(o), policy(n); a != b {
			out = append(out, Change{"~", fmt.Sprintf("placement %s: policy %s → %s", n.Name, a, b)})
		}
		if a, b := maxUnavailable(o), maxUnavailable(n); a != b {
			out = append(out, Change{"~", fmt.Sprintf("placement %s: max unavailable %s → %s", n.Name, a, b)})
		}
	}
	return out
}

// maxReplicas renders a placement's maxReplicas.
func maxReplicas(p *computev1alpha.WorkloadPlacement) string {
	if p.ScaleSettings.MaxReplicas == nil {
		return "unset"
	}
	return fmt.Sprint(*p.ScaleSettings.MaxReplicas)
}

// policy renders a placement's instance management policy.
func policy(p *computev1alpha.WorkloadPlacement) string {
	if p.ScaleSettings.InstanceManagementPolicy == "" {
		return string(computev1alpha.OrderedReadyInstanceManagementPolicy)
	}
	return string(p.ScaleSettings.InstanceManagementPolicy)
}

// maxUnavailable renders a placement's rollout budget.
func maxUnavailable(p *computev1alpha.WorkloadPlacement) string {
	if p.RolloutStrategy == nil || p.RolloutStrategy.MaxUnavailable == nil {
		return "1"
	}
	return fmt.Sprint(*p.RolloutStrategy.MaxUnavailable)
}

// limit renders a spec's revision history limit.
func limit(s *computev1alpha.WorkloadSpec) string {
	if s.RevisionHistoryLimit == nil {
		return "10"
	}
	return fmt.Sprint(*s.RevisionHistoryLimit)
}

// toJSON converts v to generic JSON values.
func toJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// readable rewrites the references of a template (as JSON) into the
// values a plan shows: a variable read from a key becomes "from Secret db
// key password", a Secret or ConfigMap volume gains "from": "Secret db",
// and image pull secrets become a set keyed by name, so adding one is a
// change (a list item holding only its name would be skipped as a key).
func readable(tpl any) any {
	spec, _ := lookup(tpl, "spec").(map[string]any)
	if spec == nil {
		return tpl
	}
	for _, v := range items(spec["volumes"]) {
		if s, ok := v["secret"].(map[string]any); ok && s["secretName"] != nil {
			v["from"] = fmt.Sprint("Secret ", s["secretName"])
			delete(s, "secretName")
		}
		if c, ok := v["configMap"].(map[string]any); ok && c["name"] != nil {
			v["from"] = fmt.Sprint("ConfigMap ", c["name"])
			delete(c, "name")
		}
	}
	sb, _ := lookup(spec, "runtime", "sandbox").(map[string]any)
	if sb == nil {
		return tpl
	}
	if list := items(sb["imagePullSecrets"]); len(list) > 0 {
		set := map[string]any{}
		for _, s := range list {
			if n, ok := s["name"].(string); ok {
				set[n] = n
			}
		}
		sb["imagePullSecrets"] = set
	}
	for _, c := range items(sb["containers"]) {
		for _, e := range items(c["env"]) {
			if text := keyRefText(e["valueFrom"]); text != "" {
				e["value"] = text
				delete(e, "valueFrom")
			}
		}
	}
	return tpl
}

// keyRefText describes a valueFrom that reads one key of a Secret or
// ConfigMap ("from Secret db key password"), or returns "".
func keyRefText(v any) string {
	src, _ := v.(map[string]any)
	if len(src) != 1 {
		return ""
	}
	for kind, key := range map[string]string{"Secret": "secretKeyRef", "ConfigMap": "configMapKeyRef"} {
		ref, ok := src[key].(map[string]any)
		if !ok {
			continue
		}
		text := fmt.Sprintf("from %s %v key %v", kind, ref["name"], ref["key"])
		if ref["optional"] == true {
			text += " (optional)"
		}
		return text
	}
	return ""
}

// lookup walks JSON objects along keys; nil when one is missing.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// items returns the objects of a JSON list.
func items(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// flatten maps every leaf of a JSON value to a path. Lists of objects
// with a "name" are keyed by name ("containers[app]"), other lists by
// index.
func flatten(prefix string, v any) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				walk(join(path, k), val)
			}
		case []any:
			for i, item := range t {
				key := fmt.Sprint(i)
				if m, ok := item.(map[string]any); ok {
					if n, ok := m["name"].(string); ok {
						key = n
					}
				}
				walk(fmt.Sprintf("%s[%s]", path, key), item)
			}
		case nil:
		default:
			data, _ := json.Marshal(t)
			s := string(data)
			if str, ok := t.(string); ok {
				s = str
			}
			out[path] = s
		}
	}
	walk(prefix, v)
	return out
}

// join appends a key to a path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldChanges compares flattened values and names each change with
// label.
func fieldChanges(before, after map[string]string, label func(string) string) []Change {
	paths := make([]string, 0, len(before)+len(after))
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []Change
	for _, p := range paths {
		b, had := before[p]
		a, has := after[p]
		// The name of a list item keyed by name is its key: it never
		// changes on its own.
		if isKeyName(p, a, b) {
			continue
		}
		switch {
		case !had:
			out = append(out, Change{"+", fmt.Sprintf("%s: %s", label(p), a)})
		case !has:
			out = append(out, Change{"-", fmt.Sprintf("%s: %s", label(p), b)})
		case a != b:
			out = append(out, Change{"~", fmt.Sprintf("%s: %s → %s", label(p), b, a)})
		}
	}
	return out
}

// isKeyName reports whether path is "<list>[key].name" holding key.
func isKeyName(path, a, b string) bool {
	head, ok := strings.CutSuffix(path, "].name")
	if !ok {
		return false
	}
	i := strings.LastIndex(head, "[")
	if i < 0 {
		return false
	}
	key := head[i+1:]
	return (a == "" || a == key) && (b == "" || b == key)
}

// templateLabel names template paths for people.
func templateLabel(spec *computev1alpha.WorkloadSpec) func(string) string {
	single := spec.Template.Spec.Runtime.Sandbox != nil && len(spec.Template.Spec.Runtime.Sandbox.Containers) == 1
	return func(p string) string {
		if p == "metadata.annotations."+computev1alpha.RestartedAtAnnotation {
			return "restarted at"
		}
		rest, ok := strings.CutPrefix(p, "spec.runtime.sandbox.containers[")
		if !ok {
			return specLabel(p)
		}
		name, field, _ := strings.Cut(rest, "]")
		field = strings.TrimPrefix(field, ".")
		suffix := ""
		if !single {
			suffix = " (" + name + ")"
		}
		switch {
		case field == "image":
			return "image" + suffix
		case strings.HasPrefix(field, "env[") && strings.HasSuffix(field, "].value"):
			return "env " + strings.TrimSuffix(strings.TrimPrefix(field, "env["), "].value") + suffix
		case strings.HasPrefix(field, "command["):
			return "command" + field[len("command"):] + suffix
		case strings.HasPrefix(field, "args["):
			return "args" + field[len("args"):] + suffix
		case strings.HasPrefix(field, "volumeAttachments[") && strings.HasSuffix(field, "].mountPath"):
			return "mount " + strings.TrimSuffix(strings.TrimPrefix(field, "volumeAttachments["), "].mountPath") + suffix
		case strings.HasPrefix(field, "ports["):
			port, sub, _ := strings.Cut(strings.TrimPrefix(field, "ports["), "]")
			if sub = strings.TrimPrefix(sub, "."); sub != "port" {
				port += " " + sub
			}
			return "port " + port + suffix
		}
		if single {
			return "container " + field
		}
		return "container " + name + " " + field
	}
}

// specLabel names a template path outside the containers.
func specLabel(p string) string {
	switch {
	case p == "spec.runtime.resources.instanceType":
		return "instance type"
	case strings.HasPrefix(p, "spec.runtime.sandbox.imagePullSecrets."):
		return "image pull secret"
	case strings.HasPrefix(p, "spec.volumes[") && strings.HasSuffix(p, "].from"):
		return "volume " + strings.TrimSuffix(strings.TrimPrefix(p, "spec.volumes["), "].from")
	}
	return strings.TrimPrefix(p, "spec.")
}
