package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// The kinds of object a workload reads data from.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// EnvSource is where a variable set by --env-from-secret or
// --env-from-configmap reads its value: a key of a Secret or ConfigMap.
type EnvSource struct {
	// Kind is KindSecret or KindConfigMap.
	Kind string
	// Name is the object; Key the key in it.
	Name, Key string
}

// EnvAllChange is a parsed --env-from-secret-all or
// --env-from-configmap-all: set a variable for every key of the object
// Name of Kind, named Prefix and the key, or stop (Remove).
type EnvAllChange struct {
	Kind   string
	Name   string
	Prefix string
	Remove bool
}

// Mount is a parsed --mount-secret or --mount-configmap: mount the object
// Name of Kind at Path in the container, or remove its mount.
type Mount struct {
	Kind   string
	Name   string
	Path   string
	Remove bool
}

// PullSecretChange is a parsed --pull-secret: add the image pull secret
// Name, or remove it.
type PullSecretChange struct {
	Name   string
	Remove bool
}

// flagOfKind names the flag of an env or mount change by kind and verb
// ("env-from", "mount").
func flagOfKind(verb, kind string) string {
	return "--" + verb + "-" + strings.ToLower(kind)
}

// objectNameError explains why name cannot name a Secret or ConfigMap, or
// returns "".
func objectNameError(name string) string {
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return ""
}

// ParseEnvFrom parses the value of --env-from-secret or
// --env-from-configmap (kind says which): "NAME=OBJECT:KEY" sets variable
// NAME from key KEY of the object. Removal goes through --env NAME-: a
// variable is one thing whatever its source.
func ParseEnvFrom(kind, s string) (EnvChange, error) {
	fl, obj := flagOfKind("env-from", kind), strings.ToUpper(kind)
	usage := fmt.Sprintf("use NAME=%s:KEY to read variable NAME from key KEY of a %s (remove a variable with --env NAME-)", obj, kind)
	name, ref, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return EnvChange{}, fmt.Errorf("%s %q: %s", fl, s, usage)
	}
	object, key, ok := strings.Cut(ref, ":")
	if !ok || object == "" || key == "" {
		return EnvChange{}, fmt.Errorf("%s %q: %s", fl, s, usage)
	}
	if msg := objectNameError(object); msg != "" {
		return EnvChange{}, fmt.Errorf("%s %q: %s name %q is not valid: %s", fl, s, kind, object, msg)
	}
	if msgs := utilvalidation.IsConfigMapKey(key); len(msgs) > 0 {
		return EnvChange{}, fmt.Errorf("%s %q: key %q is not valid: %s", fl, s, key, strings.Join(msgs, "; "))
	}
	return EnvChange{Name: name, Source: &EnvSource{Kind: kind, Name: object, Key: key}}, nil
}

// ParseEnvAll parses the value of --env-from-secret-all or
// --env-from-configmap-all (kind says which): "OBJECT" sets a variable for
// every key of the object, "OBJECT:PREFIX" names them PREFIX and the key,
// "OBJECT-" stops.
func ParseEnvAll(kind, s string) (EnvAllChange, error) {
	fl, obj := flagOfKind("env-from", kind)+"-all", strings.ToUpper(kind)
	if name, ok := strings.CutSuffix(s, "-"); ok && !strings.Contains(s, ":") && name != "" {
		if msg := objectNameError(name); msg != "" {
			return EnvAllChange{}, fmt.Errorf("%s %q: %s name %q is not valid: %s", fl, s, kind, name, msg)
		}
		return EnvAllChange{Kind: kind, Name: name, Remove: true}, nil
	}
	name, prefix, hasPrefix := strings.Cut(s, ":")
	if name == "" || hasPrefix && prefix == "" {
		return EnvAllChange{}, fmt.Errorf("%s %q: use %s or %s:PREFIX to set a variable for every key of a %s, or %s- to stop",
			fl, s, obj, obj, kind, obj)
	}
	if msg := objectNameError(name); msg != "" {
		return EnvAllChange{}, fmt.Errorf("%s %q: %s name %q is not valid: %s", fl, s, kind, name, msg)
	}
	if msgs := utilvalidation.IsCIdentifier(prefix); hasPrefix && len(msgs) > 0 {
		return EnvAllChange{}, fmt.Errorf("%s %q: prefix %q is not valid: %s", fl, s, prefix, strings.Join(msgs, "; "))
	}
	return EnvAllChange{Kind: kind, Name: name, Prefix: prefix}, nil
}

// applyEnvAll adds, changes the prefix of and removes the envFrom sources
// of c, keeping order: a source is one object, whatever its prefix.
func applyEnvAll(c *computev1alpha.SandboxContainer, changes []EnvAllChange) {
	for _, ch := range changes {
		i := slices.IndexFunc(c.EnvFrom, func(e computev1alpha.EnvFromSource) bool { return envAllKey(e) == ch.Kind+"/"+ch.Name })
		switch {
		case ch.Remove && i >= 0:
			c.EnvFrom = slices.Delete(c.EnvFrom, i, i+1)
		case ch.Remove:
		case i >= 0:
			c.EnvFrom[i].Prefix = ch.Prefix
		case ch.Kind == KindSecret:
			c.EnvFrom = append(c.EnvFrom, computev1alpha.EnvFromSource{Prefix: ch.Prefix, SecretRef: &computev1alpha.SecretEnvSource{Name: ch.Name}})
		default:
			c.EnvFrom = append(c.EnvFrom, computev1alpha.EnvFromSource{Prefix: ch.Prefix, ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: ch.Name}})
		}
	}
	if len(c.EnvFrom) == 0 {
		c.EnvFrom = nil
	}
}

// envAllKey is "Kind/name" of the object an envFrom source reads.
func envAllKey(e computev1alpha.EnvFromSource) string {
	switch {
	case e.SecretRef != nil:
		return KindSecret + "/" + e.SecretRef.Name
	case e.ConfigMapRef != nil:
		return KindConfigMap + "/" + e.ConfigMapRef.Name
	}
	return ""
}

// envAllText shows an envFrom source: "every key of Secret db, as DB_*".
func envAllText(e computev1alpha.EnvFromSource) string {
	kind, name, _ := strings.Cut(envAllKey(e), "/")
	text := "every key of " + kind + " " + name
	if e.Prefix != "" {
		text += ", as " + e.Prefix + "*"
	}
	return text
}

// ParseMount parses the value of --mount-secret or --mount-configmap
// (kind says which): "OBJECT:PATH" mounts every key of the object as a
// file under the absolute PATH; "OBJECT-" removes the mount.
func ParseMount(kind, s string) (Mount, error) {
	fl, obj := flagOfKind("mount", kind), strings.ToUpper(kind)
	if name, ok := strings.CutSuffix(s, "-"); ok && !strings.Contains(s, ":") && name != "" {
		if msg := objectNameError(name); msg != "" {
			return Mount{}, fmt.Errorf("%s %q: %s name %q is not valid: %s", fl, s, kind, name, msg)
		}
		return Mount{Kind: kind, Name: name, Remove: true}, nil
	}
	name, p, ok := strings.Cut(s, ":")
	if !ok || name == "" || p == "" {
		return Mount{}, fmt.Errorf("%s %q: use %s:PATH to mount a %s's keys as files under PATH, or %s- to remove the mount",
			fl, s, obj, kind, obj)
	}
	if msg := objectNameError(name); msg != "" {
		return Mount{}, fmt.Errorf("%s %q: %s name %q is not valid: %s", fl, s, kind, name, msg)
	}
	if !strings.HasPrefix(p, "/") {
		return Mount{}, fmt.Errorf("%s %q: the mount path %q must be absolute, e.g. /etc/%s", fl, s, p, name)
	}
	return Mount{Kind: kind, Name: name, Path: path.Clean(p)}, nil
}

// ParsePullSecret parses "NAME" (use the Secret NAME to pull images) or
// "NAME-" (stop using it).
func ParsePullSecret(s string) (PullSecretChange, error) {
	c := PullSecretChange{Name: s}
	if name, ok := strings.CutSuffix(s, "-"); ok {
		c = PullSecretChange{Name: name, Remove: true}
	}
	if c.Name == "" {
		return PullSecretChange{}, fmt.Errorf("--pull-secret %q: use NAME to pull images with the Secret NAME, or NAME- to stop", s)
	}
	if msg := objectNameError(c.Name); msg != "" {
		return PullSecretChange{}, fmt.Errorf("--pull-secret %q: Secret name %q is not valid: %s", s, c.Name, msg)
	}
	return c, nil
}

// VolumeName is the volume a mount flag gives the object name of kind:
// "secret-<name>" or "configmap-<name>", a DNS label. A name with dots or
// too long for a label is shortened and made unique with a hash of the
// name, so the same object always gets the same volume.
func VolumeName(kind, name string) string {
	prefix := strings.ToLower(kind) + "-"
	v := prefix + name
	if len(v) <= utilvalidation.DNS1123LabelMaxLength && !strings.Contains(name, ".") {
		return v
	}
	sum := sha256.Sum256([]byte(kind + "/" + name))
	hash := hex.EncodeToString(sum[:])[:10]
	keep := utilvalidation.DNS1123LabelMaxLength - len(prefix) - len(hash) - 1
	short := strings.ReplaceAll(name, ".", "-")
	if len(short) > keep {
		short = short[:keep]
	}
	return prefix + strings.TrimRight(short, "-") + "-" + hash
}

// envVar builds the variable an env change sets.
func (e EnvChange) envVar() computev1alpha.EnvVar {
	if e.Source == nil {
		return computev1alpha.EnvVar{Name: e.Name, Value: e.Value}
	}
	src := &computev1alpha.EnvVarSource{}
	if e.Source.Kind == KindSecret {
		src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.Source.Name}, Key: e.Source.Key}
	} else {
		src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.Source.Name}, Key: e.Source.Key}
	}
	return computev1alpha.EnvVar{Name: e.Name, ValueFrom: src}
}

// applyMounts adds, moves and removes the volumes of the mount flags in
// spec and their attachments to c. A volume with the derived name that
// holds something else is an error, as is a path another volume of c is
// mounted at.
func applyMounts(spec *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer, mounts []Mount) error {
	for _, m := range mounts {
		name := VolumeName(m.Kind, m.Name)
		vi := slices.IndexFunc(spec.Volumes, func(v computev1alpha.InstanceVolume) bool { return v.Name == name })
		if vi >= 0 && !mountsObject(spec.Volumes[vi], m.Kind, m.Name) {
			return cmdutil.UsageErrorf("%s %s: volume %s exists and holds something else: change it with a manifest (deploy -f)",
				flagOfKind("mount", m.Kind), m.Name, name)
		}
		ai := slices.IndexFunc(c.VolumeAttachments, func(a computev1alpha.VolumeAttachment) bool { return a.Name == name })
		if m.Remove {
			if ai >= 0 {
				c.VolumeAttachments = slices.Delete(c.VolumeAttachments, ai, ai+1)
			}
			if vi >= 0 {
				spec.Volumes = slices.Delete(spec.Volumes, vi, vi+1)
			}
			continue
		}
		if other := mountedAt(c, m.Path, name); other != "" {
			return cmdutil.UsageErrorf("%s %s:%s: volume %s is mounted at %s already: choose another path, or remove that mount",
				flagOfKind("mount", m.Kind), m.Name, m.Path, other, m.Path)
		}
		if vi < 0 {
			spec.Volumes = append(spec.Volumes, newVolume(name, m.Kind, m.Name))
		}
		mountPath := m.Path
		if ai >= 0 {
			c.VolumeAttachments[ai].MountPath = &mountPath
		} else {
			c.VolumeAttachments = append(c.VolumeAttachments, computev1alpha.VolumeAttachment{Name: name, MountPath: &mountPath})
		}
	}
	return nil
}

// mountsObject reports whether v is filled from the object name of kind.
func mountsObject(v computev1alpha.InstanceVolume, kind, name string) bool {
	switch {
	case kind == KindSecret && v.Secret != nil:
		return v.Secret.SecretName == name || v.Secret.Name == name
	case kind == KindConfigMap && v.ConfigMap != nil:
		return v.ConfigMap.Name == name
	}
	return false
}

// mountedAt names the volume other than self that c mounts at p, or "".
func mountedAt(c *computev1alpha.SandboxContainer, p, self string) string {
	for _, a := range c.VolumeAttachments {
		if a.Name != self && a.MountPath != nil && path.Clean(*a.MountPath) == p {
			return a.Name
		}
	}
	return ""
}

// newVolume is the volume filled from the object name of kind.
func newVolume(volume, kind, name string) computev1alpha.InstanceVolume {
	v := computev1alpha.InstanceVolume{Name: volume}
	if kind == KindSecret {
		v.Secret = &computev1alpha.SecretVolumeSource{SecretName: name}
	} else {
		v.ConfigMap = &computev1alpha.ConfigMapVolumeSource{Name: name}
	}
	return v
}

// applyPullSecrets adds and removes image pull secrets of sb, keeping
// order; adding one already there changes nothing.
func applyPullSecrets(sb *computev1alpha.SandboxRuntime, changes []PullSecretChange) {
	for _, ch := range changes {
		i := slices.IndexFunc(sb.ImagePullSecrets, func(r computev1alpha.LocalSecretReference) bool { return r.Name == ch.Name })
		switch {
		case ch.Remove && i >= 0:
			sb.ImagePullSecrets = slices.Delete(sb.ImagePullSecrets, i, i+1)
		case !ch.Remove && i < 0:
			sb.ImagePullSecrets = append(sb.ImagePullSecrets, computev1alpha.LocalSecretReference{Name: ch.Name})
		}
	}
	if len(sb.ImagePullSecrets) == 0 {
		sb.ImagePullSecrets = nil
	}
}

// parseRefs parses the raw values of the reference flags, and refuses a
// variable that --env and an --env-from flag both name.
func (o *Options) parseRefs() error {
	for _, set := range []struct {
		kind   string
		values []string
	}{{KindSecret, o.EnvFromSecretValues}, {KindConfigMap, o.EnvFromConfigMapValues}} {
		for _, v := range set.values {
			e, err := ParseEnvFrom(set.kind, v)
			if err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			if i := slices.IndexFunc(o.Env, func(c EnvChange) bool { return c.Name == e.Name }); i >= 0 {
				return cmdutil.UsageErrorf("%s %q: --env %q names variable %s too; give each variable one source",
					flagOfKind("env-from", set.kind), v, o.EnvValues[i], e.Name)
			}
			o.EnvFrom = append(o.EnvFrom, e)
		}
	}
	// Each parses (the first error wins), as the flags are independent.
	for _, err := range []error{
		parseEach(&o.EnvAll, o.EnvFromSecretAllValues, ofKind(KindSecret, ParseEnvAll)),
		parseEach(&o.EnvAll, o.EnvFromConfigMapAllValues, ofKind(KindConfigMap, ParseEnvAll)),
		parseEach(&o.Mounts, o.MountSecretValues, ofKind(KindSecret, ParseMount)),
		parseEach(&o.Mounts, o.MountConfigMapValues, ofKind(KindConfigMap, ParseMount)),
		parseEach(&o.PullSecrets, o.PullSecretValues, ParsePullSecret),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// parseEach parses each of values with parse, appending what it returns
// to into; a value parse refuses is a usage error.
func parseEach[T any](into *[]T, values []string, parse func(string) (T, error)) error {
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		*into = append(*into, x)
	}
	return nil
}

// ofKind is parse of references of kind (KindSecret or KindConfigMap).
func ofKind[T any](kind string, parse func(kind, s string) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) { return parse(kind, s) }
}
