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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// Kinds of referenced objects.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// Size limits, as Datum's: one object's data, and a WorkloadDeployment's
// referenced data in all; and compute's own, a project namespace's
// companions in all (each object counted once however many deployments
// share it), so one namespace cannot fill the hub and every cell.
const (
	MaxObjectBytes     = 256 << 10
	MaxDeploymentBytes = 1 << 20
	MaxNamespaceBytes  = 8 << 20
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

// Visit calls fn for every reference spec makes to a ConfigMap or Secret
// (volume sources, environment variables read from keys, whole objects
// read as environment (envFrom), image pull secrets), with the path of the field that makes it under base.
func Visit(spec *computev1alpha.InstanceSpec, base *field.Path, fn func(kind, name string, optional bool, path *field.Path)) {
	visitVolumes(spec.Volumes, base.Child("volumes"), fn)
	sb := spec.Runtime.Sandbox
	if sb == nil {
		return
	}
	sbp := base.Child("runtime", "sandbox")
	for ci := range sb.Containers {
		visitContainer(&sb.Containers[ci], sbp.Child("containers").Index(ci), fn)
	}
	for i, s := range sb.ImagePullSecrets {
		if s.Name != "" {
			fn(KindSecret, s.Name, false, sbp.Child("imagePullSecrets").Index(i).Child("name"))
		}
	}
}

// optional reads an optional flag of a reference: unset is false.
func optional(o *bool) bool { return o != nil && *o }

// visitVolumes calls fn for the Secrets and ConfigMaps volumes, at path,
// mount (see Visit).
func visitVolumes(volumes []computev1alpha.InstanceVolume, path *field.Path, fn func(kind, name string, optional bool, path *field.Path)) {
	for i, v := range volumes {
		p := path.Index(i)
		if s := v.Secret; s != nil {
			name, f := s.SecretName, "secretName"
			if name == "" {
				name, f = s.Name, "name"
			}
			if name != "" {
				fn(KindSecret, name, optional(s.Optional), p.Child("secret", f))
			}
		}
		if c := v.ConfigMap; c != nil && c.Name != "" {
			fn(KindConfigMap, c.Name, optional(c.Optional), p.Child("configMap", "name"))
		}
	}
}

// visitContainer calls fn for the Secrets and ConfigMaps container c, at
// path, reads its environment from: keys (env) and whole objects (envFrom)
// (see Visit).
func visitContainer(c *computev1alpha.SandboxContainer, path *field.Path, fn func(kind, name string, optional bool, path *field.Path)) {
	for ei, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		p := path.Child("env").Index(ei).Child("valueFrom")
		if r := e.ValueFrom.SecretKeyRef; r != nil && r.Name != "" {
			fn(KindSecret, r.Name, optional(r.Optional), p.Child("secretKeyRef", "name"))
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil && r.Name != "" {
			fn(KindConfigMap, r.Name, optional(r.Optional), p.Child("configMapKeyRef", "name"))
		}
	}
	for ei, e := range c.EnvFrom {
		p := path.Child("envFrom").Index(ei)
		if r := e.ConfigMapRef; r != nil && r.Name != "" {
			fn(KindConfigMap, r.Name, optional(r.Optional), p.Child("configMapRef", "name"))
		}
		if r := e.SecretRef; r != nil && r.Name != "" {
			fn(KindSecret, r.Name, optional(r.Optional), p.Child("secretRef", "name"))
		}
	}
}

// Refs returns every ConfigMap and Secret spec reads (see Visit), sorted
// by token and without duplicates. An object is Optional only when every
// reference to it is.
func Refs(spec *computev1alpha.InstanceSpec) []Ref {
	byToken := map[string]*Ref{}
	Visit(spec, nil, func(kind, name string, optional bool, _ *field.Path) {
		if r, ok := byToken[Token(kind, name)]; ok {
			r.Optional = r.Optional && optional
			return
		}
		byToken[Token(kind, name)] = &Ref{Kind: kind, Name: name, Optional: optional}
	})
	out := make([]Ref, 0, len(byToken))
	for _, r := range byToken {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Ref) int { return strings.Compare(a.Token(), b.Token()) })
	return out
}

// MaxNameLength is the longest name of a referenced object: its companion
// name, "configmap." or "secret." and the name, must be a valid object
// name (253 characters). Admission refuses longer references.
const MaxNameLength = 253 - len("configmap.")

// CompanionName returns the name of the companion of the object of kind
// and name: "configmap.<name>" or "secret.<name>", as Datum names them.
// Karmada's dependency rule (config/federation) computes the same name.
func CompanionName(kind, name string) string {
	return strings.ToLower(kind) + "." + name
}

// CompanionNameOfToken is CompanionName of a token; "" for a malformed one.
func CompanionNameOfToken(token string) string {
	kind, name, ok := ParseToken(token)
	if !ok {
		return ""
	}
	return CompanionName(kind, name)
}

// SourceVersion is the version a companion carries and a cell waits for:
// a hash of the source object's uid and resourceVersion, so it changes
// whenever the object is written (or deleted and created again) and says
// nothing about its content. A hash of the content would let anyone who
// reads a WorkloadDeployment or a companion's metadata test a guess of a
// Secret offline, and show where two tenants hold the same one.
func SourceVersion(uid, resourceVersion string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s|%s", len(uid), uid, resourceVersion)))
	return hex.EncodeToString(sum[:])[:16]
}

// Expected is what a WorkloadDeployment's annotations say its cell must
// hold.
type Expected struct {
	// Resolved is false while the management plane has not resolved the
	// references (the annotation is absent or malformed).
	Resolved bool
	// Tokens are the expected objects, sorted.
	Tokens []string
	// Hashes maps a token to the source version its companion must carry;
	// a token without one only needs to be present.
	Hashes map[string]string
	// Error is the resolution error the management plane recorded.
	Error string
	// TemplateHash is the hash of the template the set was resolved for.
	TemplateHash string
}

// For reports whether e was resolved for tpl: a set resolved for another
// template (before a template change reached the management plane) says
// nothing about what tpl needs.
func (e Expected) For(tpl *computev1alpha.InstanceTemplateSpec) bool {
	return e.Resolved && names.HashesOf(tpl).Names(e.TemplateHash)
}

// Annotations returns the annotations that record e on a
// WorkloadDeployment: the expected tokens, their hashes, and the error
// (present and empty when there is none, so every copy downstream sees it
// cleared).
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
		computev1alpha.ExpectedReferencedDataAnnotation:     string(t),
		computev1alpha.ReferencedDataHashesAnnotation:       string(h),
		computev1alpha.ReferencedDataErrorAnnotation:        e.Error,
		computev1alpha.ReferencedDataTemplateHashAnnotation: e.TemplateHash,
	}
}

// AnnotationKeys are the annotations of a WorkloadDeployment that say what
// its cell must hold: they travel to the cell with it.
var AnnotationKeys = []string{computev1alpha.ExpectedReferencedDataAnnotation, computev1alpha.ReferencedDataHashesAnnotation,
	computev1alpha.ReferencedDataErrorAnnotation, computev1alpha.ReferencedDataTemplateHashAnnotation}

// Changed reports whether what a WorkloadDeployment's annotations say its
// cell must hold differs between before and after.
func Changed(before, after map[string]string) bool {
	for _, k := range AnnotationKeys {
		if before[k] != after[k] {
			return true
		}
	}
	return false
}

// ExpectedOf reads what annotations say the cell must hold.
func ExpectedOf(annotations map[string]string) Expected {
	e := Expected{Error: annotations[computev1alpha.ReferencedDataErrorAnnotation],
		TemplateHash: annotations[computev1alpha.ReferencedDataTemplateHashAnnotation]}
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

// SplitError splits a resolution error as the error annotation holds it,
// "Reason: message"; one without a reason is Resolving.
func SplitError(s string) (reason, message string) {
	reason, message, ok := strings.Cut(s, ": ")
	if !ok {
		return computev1alpha.ReasonResolving, s
	}
	return reason, message
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
		reason, msg := SplitError(e.Error)
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
