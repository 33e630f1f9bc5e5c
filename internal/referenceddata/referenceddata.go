// Package referenceddata is the contract of referenced-data delivery (see
// api/v1alpha/referenceddata.go): which ConfigMaps and Secrets an instance
// template reads, the token and companion name of each, the annotations
// that carry what a cell must hold, content hashes, the size limits, and
// the cell's verdict on whether an Instance may run. It is pure: the
// management plane's resolver and the cell's gate both decide with it, so
// the two planes cannot disagree on a name or a version.
package referenceddata

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Kinds of referenced objects.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// Size limits, as Datum's: one object's data, and a WorkloadDeployment's
// referenced data in all.
const (
	MaxObjectBytes     = 256 << 10
	MaxDeploymentBytes = 1 << 20
)

// Ref is an object of the template's namespace that an instance template
// reads.
type Ref struct {
	// Kind is KindConfigMap or KindSecret.
	Kind string
	// Name of the object.
	Name string
	// Optional is set when every reference to it is optional: a missing
	// object is skipped instead of holding the Instances.
	Optional bool
}

// Token is the ref as the expected-referenced-data annotation names it.
func (r Ref) Token() string { return Token(r.Kind, r.Name) }

// Token returns "Kind/name".
func Token(kind, name string) string { return kind + "/" + name }

// ParseToken splits a token; ok is false for a malformed one.
func ParseToken(token string) (kind, name string, ok bool) {
	kind, name, ok = strings.Cut(token, "/")
	return kind, name, ok && name != "" && (kind == KindConfigMap || kind == KindSecret)
}

// Refs returns every ConfigMap and Secret spec reads, sorted by token and
// without duplicates: volume sources, environment variables read from
// keys, and image pull secrets. An object is Optional only when every
// reference to it is.
func Refs(spec *computev1alpha.InstanceSpec) []Ref {
	byToken := map[string]*Ref{}
	add := func(kind, name string, optional *bool) {
		if name == "" {
			return
		}
		opt := optional != nil && *optional
		if r, ok := byToken[Token(kind, name)]; ok {
			r.Optional = r.Optional && opt
			return
		}
		byToken[Token(kind, name)] = &Ref{Kind: kind, Name: name, Optional: opt}
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
	out := make([]Ref, 0, len(byToken))
	for _, r := range byToken {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Ref) int { return strings.Compare(a.Token(), b.Token()) })
	return out
}

// maxName is the longest name of a ConfigMap or Secret.
const maxName = 253

// CompanionName returns the name of the companion of the object of kind
// and name: "configmap.<name>" or "secret.<name>", as Datum names them.
// When that is too long for an object name, the name is cut and a hash of
// the whole name appended, so two long names never share a companion.
func CompanionName(kind, name string) string {
	full := strings.ToLower(kind) + "." + name
	if len(full) <= maxName {
		return full
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(full))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	return strings.TrimRight(full[:maxName-len(suffix)], "-.") + suffix
}

// CompanionNameOfToken is CompanionName of a token; "" for a malformed one.
func CompanionNameOfToken(token string) string {
	kind, name, ok := ParseToken(token)
	if !ok {
		return ""
	}
	return CompanionName(kind, name)
}

// ContentHash hashes an object's content: its type (a Secret's; "" for a
// ConfigMap) and data, binary data included, in key order.
func ContentHash(typ string, data map[string][]byte) string {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%d:%s", len(typ), typ)
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "|%d:%s=%d:", len(k), k, len(data[k]))
		_, _ = h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Expected is what a WorkloadDeployment's annotations say its cell must
// hold.
type Expected struct {
	// Resolved is false while the management plane has not resolved the
	// references (the annotation is absent or malformed).
	Resolved bool
	// Tokens are the expected objects, sorted.
	Tokens []string
	// Hashes maps a token to the content hash its companion must carry;
	// a token without one only needs to be present.
	Hashes map[string]string
	// Error is the resolution error the management plane recorded.
	Error string
}

// Annotations returns the annotations that record e on a
// WorkloadDeployment: the expected tokens, their hashes, and the error
// ("" removes it when merged).
func (e Expected) Annotations() map[string]string {
	tokens := e.Tokens
	if tokens == nil {
		tokens = []string{}
	}
	t, _ := json.Marshal(tokens)
	hashes := e.Hashes
	if hashes == nil {
		hashes = map[string]string{}
	}
	h, _ := json.Marshal(hashes)
	return map[string]string{
		computev1alpha.ExpectedReferencedDataAnnotation: string(t),
		computev1alpha.ReferencedDataHashesAnnotation:   string(h),
		computev1alpha.ReferencedDataErrorAnnotation:    e.Error,
	}
}

// ExpectedOf reads what annotations say the cell must hold.
func ExpectedOf(annotations map[string]string) Expected {
	e := Expected{Error: annotations[computev1alpha.ReferencedDataErrorAnnotation]}
	raw, ok := annotations[computev1alpha.ExpectedReferencedDataAnnotation]
	if !ok || json.Unmarshal([]byte(raw), &e.Tokens) != nil {
		e.Tokens = nil
		return e
	}
	if raw := annotations[computev1alpha.ReferencedDataHashesAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &e.Hashes)
	}
	e.Resolved = true
	return e
}

// Verdict is whether an Instance may run on the companions of its cell.
type Verdict struct {
	// Ready is set when every expected companion is present at its hash.
	Ready bool
	// Reason and Message say what it waits for (Datum's reasons).
	Reason, Message string
	// Waiting are the tokens of the companions missing or not at their
	// expected version.
	Waiting []string
}

// Decide judges an Instance whose template references data, from what its
// WorkloadDeployment expects and the companions present in its namespace
// (companion name → content hash).
func Decide(e Expected, present map[string]string) Verdict {
	if !e.Resolved {
		return Verdict{Reason: computev1alpha.ReasonResolving,
			Message: "waiting for the management plane to resolve the referenced ConfigMaps and Secrets"}
	}
	if e.Error != "" {
		reason, msg, ok := strings.Cut(e.Error, ": ")
		if !ok {
			reason, msg = computev1alpha.ReasonResolving, e.Error
		}
		return Verdict{Reason: reason, Message: msg}
	}
	var waiting []string
	for _, t := range e.Tokens {
		hash, ok := present[CompanionNameOfToken(t)]
		if !ok || (e.Hashes[t] != "" && hash != e.Hashes[t]) {
			waiting = append(waiting, t)
		}
	}
	if len(waiting) > 0 {
		return Verdict{Reason: computev1alpha.ReasonAwaitingPropagation, Waiting: waiting,
			Message: fmt.Sprintf("waiting for %s to reach this cell: %s", plural(len(waiting)), strings.Join(waiting, ", "))}
	}
	return Verdict{Ready: true, Reason: computev1alpha.ReasonReferencedDataReady,
		Message: fmt.Sprintf("all %s present in the cell", plural(len(e.Tokens)))}
}

func plural(n int) string {
	if n == 1 {
		return "1 referenced object"
	}
	return fmt.Sprintf("%d referenced objects", n)
}

// Missing returns the expected tokens whose companion is not in present at
// all, whatever its hash, in the order of e.Tokens: what a runtime cannot
// start an Instance without. Unlike Decide it ignores versions and
// resolution errors; it is a runtime's defence, not the gate.
func Missing(e Expected, present map[string]string) []string {
	var out []string
	for _, t := range e.Tokens {
		if _, ok := present[CompanionNameOfToken(t)]; !ok {
			out = append(out, t)
		}
	}
	return out
}
