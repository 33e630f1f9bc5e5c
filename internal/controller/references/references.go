package references

import (
	"slices"
	"strings"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Kinds of referenced objects, as they appear in the annotation.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Reference is an object of the Workload's namespace an instance template
// reads.
type Reference struct {
	// Kind is KindSecret or KindConfigMap.
	Kind string
	// Name of the object.
	Name string
}

// String formats the reference as it appears in the annotation.
func (r Reference) String() string { return r.Kind + "/" + r.Name }

// Required returns the Secrets and ConfigMaps spec needs to exist, sorted
// and without duplicates: volume sources, environment variables read from
// keys, and image pull secrets. A reference marked optional is left out.
func Required(spec *computev1alpha.InstanceSpec) []Reference {
	var out []Reference
	add := func(kind, name string, optional *bool) {
		if name != "" && (optional == nil || !*optional) {
			out = append(out, Reference{Kind: kind, Name: name})
		}
	}
	for _, v := range spec.Volumes {
		if s := v.Secret; s != nil {
			name := s.SecretName
			if name == "" {
				name = s.Name
			}
			add(KindSecret, name, s.Optional)
		}
		if c := v.ConfigMap; c != nil {
			add(KindConfigMap, c.Name, c.Optional)
		}
	}
	if sb := spec.Runtime.Sandbox; sb != nil {
		for _, c := range sb.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add(KindSecret, r.Name, r.Optional)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add(KindConfigMap, r.Name, r.Optional)
				}
			}
		}
		for _, s := range sb.ImagePullSecrets {
			add(KindSecret, s.Name, nil)
		}
	}
	slices.SortFunc(out, func(a, b Reference) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// Format joins references into the annotation value.
func Format(refs []Reference) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Parse splits an annotation value into references; malformed entries are
// skipped.
func Parse(value string) []Reference {
	var out []Reference //nolint:prealloc // nothing parsed is nil, so Parse(Format(refs)) round-trips
	for _, part := range strings.Split(value, ",") {
		kind, name, ok := strings.Cut(strings.TrimSpace(part), "/")
		if !ok || name == "" || (kind != KindSecret && kind != KindConfigMap) {
			continue
		}
		out = append(out, Reference{Kind: kind, Name: name})
	}
	return out
}
