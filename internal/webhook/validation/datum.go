package validation

import (
	"fmt"
	"net/netip"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Bounds of the Datum-shaped fields.
const (
	MaxKeyItems      = 64
	MaxPolicyRules   = 32
	MaxPolicyEntries = 32
	MaxMetrics       = 8
	// MaxAverageUtilization caps a metric's averageUtilization, in percent
	// of the Instances' requests: above a request, usage is bounded by the
	// limit, and a target of ten requests is a typo, never reached.
	MaxAverageUtilization = 1000
	MaxFileMode           = 0o777
)

// supportedFilesystems are the filesystems a disk populator can create.
var supportedFilesystems = []string{"ext4"}

// validateEnvSource validates an environment variable's valueFrom: exactly
// one of secretKeyRef or configMapKeyRef, naming an object and a key, and
// never together with a literal value.
func validateEnvSource(e *computev1alpha.EnvVar, p *field.Path) field.ErrorList {
	src := e.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	vp := p.Child("valueFrom")
	if e.Value != "" {
		errs = append(errs, field.Forbidden(p.Child("value"), "may not be set together with valueFrom; keep one"))
	}
	if src.FieldRef != nil {
		errs = append(errs, field.Forbidden(vp.Child("fieldRef"),
			"is not supported: instances are not pods; use a literal value, a secretKeyRef or a configMapKeyRef"))
	}
	if src.ResourceFieldRef != nil {
		errs = append(errs, field.Forbidden(vp.Child("resourceFieldRef"),
			"is not supported: an instance's resources come from its instance type; use a literal value"))
	}
	sources := 0
	if r := src.SecretKeyRef; r != nil {
		sources++
		errs = append(errs, validateKeyRef(r.Name, r.Key, "Secret", vp.Child("secretKeyRef"))...)
	}
	if r := src.ConfigMapKeyRef; r != nil {
		sources++
		errs = append(errs, validateKeyRef(r.Name, r.Key, "ConfigMap", vp.Child("configMapKeyRef"))...)
	}
	switch {
	case sources == 0 && src.FieldRef == nil && src.ResourceFieldRef == nil:
		errs = append(errs, field.Required(vp, "exactly one of secretKeyRef or configMapKeyRef is required"))
	case sources > 1:
		errs = append(errs, field.Forbidden(vp, "exactly one of secretKeyRef or configMapKeyRef may be set; remove one"))
	}
	return errs
}

// validateKeyRef validates a reference to a key of a Secret or ConfigMap.
func validateKeyRef(name, key, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateObjectName(name, kind, p.Child("name"))...)
	switch key {
	case "":
		errs = append(errs, field.Required(p.Child("key"), "name the key of the "+kind+" to read"))
	default:
		errs = append(errs, validateName(key, p.Child("key"), utilvalidation.IsConfigMapKey)...)
	}
	return errs
}

// validateObjectName checks the name of a Secret or ConfigMap.
func validateObjectName(name, kind string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "name the "+kind+" in the Workload's namespace")}
	}
	return validateName(name, p, utilvalidation.IsDNS1123Subdomain)
}

// validateKeyItems validates the items of a Secret or ConfigMap volume: each
// maps a key to a relative path inside the volume, paths unique.
func validateKeyItems(items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	errs := maxItems(p, len(items), MaxKeyItems)
	paths := sets.New[string]()
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), "name the key to project"))
		} else {
			errs = append(errs, validateName(it.Key, ip.Child("key"), utilvalidation.IsConfigMapKey)...)
		}
		pp := ip.Child("path")
		switch clean := path.Clean(it.Path); {
		case it.Path == "":
			errs = append(errs, field.Required(pp, "say which file inside the volume gets the key, e.g. config.yaml"))
		case path.IsAbs(it.Path):
			errs = append(errs, field.Invalid(pp, it.Path, "must be a relative path inside the volume"))
		case clean == ".." || strings.HasPrefix(clean, "../") || slicesContains(strings.Split(it.Path, "/"), ".."):
			errs = append(errs, field.Invalid(pp, it.Path, "must not contain '..'"))
		case paths.Has(clean):
			errs = append(errs, field.Duplicate(pp, it.Path))
		default:
			paths.Insert(clean)
		}
		if it.Mode != nil {
			errs = append(errs, validateFileMode(*it.Mode, ip.Child("mode"))...)
		}
	}
	return errs
}

// slicesContains reports whether s contains v.
func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// validateFileMode checks permission bits.
func validateFileMode(mode int32, p *field.Path) field.ErrorList {
	if mode < 0 || mode > MaxFileMode {
		return field.ErrorList{field.Invalid(p, mode, "must be a file mode between 0 and 0777 (decimal 0 to 511)")}
	}
	return nil
}

// validateSecretSource validates a Secret volume.
func validateSecretSource(s *computev1alpha.SecretVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.SecretName != "" && s.Name != "":
		errs = append(errs, field.Forbidden(p.Child("name"), "is the deprecated spelling of secretName; set only secretName"))
	default:
		errs = append(errs, validateObjectName(s.SecretName, "Secret", p.Child("secretName"))...)
	}
	errs = append(errs, validateKeyItems(s.Items, p.Child("items"))...)
	if s.DefaultMode != nil {
		errs = append(errs, validateFileMode(*s.DefaultMode, p.Child("defaultMode"))...)
	}
	return errs
}

// validateConfigMapSource validates a ConfigMap volume.
func validateConfigMapSource(c *computev1alpha.ConfigMapVolumeSource, p *field.Path) field.ErrorList {
	errs := validateObjectName(c.Name, "ConfigMap", p.Child("name"))
	errs = append(errs, validateKeyItems(c.Items, p.Child("items"))...)
	if c.DefaultMode != nil {
		errs = append(errs, validateFileMode(*c.DefaultMode, p.Child("defaultMode"))...)
	}
	return errs
}

// validateDiskSource validates a disk volume: a template with a valid type,
// a positive storage size and at most one populator.
func validateDiskSource(d *computev1alpha.DiskTemplateVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d.DeviceName != nil {
		errs = append(errs, validateName(*d.DeviceName, p.Child("deviceName"), utilvalidation.IsDNS1123Label)...)
	}
	legacy := d.Type != "" || d.Size != nil || d.Image != "" //nolint:staticcheck // the legacy shape is read to refuse mixing it with the new one
	if d.Template == nil {
		if !legacy {
			errs = append(errs, field.Required(p.Child("template"), "describe the disk to create: template.spec.type, resources.requests.storage, populator"))
		}
		return errs
	}
	if legacy {
		errs = append(errs, field.Forbidden(p, "type, size and image are the deprecated disk shape; with template set, use template.spec only"))
	}
	tp := p.Child("template")
	errs = append(errs, validateMetadataMaps(&d.Template.Metadata, tp.Child("metadata"))...)
	sp := tp.Child("spec")
	spec := &d.Template.Spec
	if spec.Type != "" {
		errs = append(errs, validateName(spec.Type, sp.Child("type"), utilvalidation.IsDNS1123Label)...)
	}
	if r := spec.Resources; r != nil {
		rp := sp.Child("resources", "requests")
		for _, name := range sortedKeys(r.Requests) {
			q := r.Requests[name]
			switch {
			case name != corev1.ResourceStorage:
				errs = append(errs, field.NotSupported(rp.Key(string(name)), string(name), []string{string(corev1.ResourceStorage)}))
			case q.Sign() <= 0:
				errs = append(errs, field.Invalid(rp.Key(string(name)), q.String(), "must be greater than zero"))
			}
		}
	}
	if pop := spec.Populator; pop != nil {
		pp := sp.Child("populator")
		switch {
		case pop.Image != nil && pop.Filesystem != nil:
			errs = append(errs, field.Forbidden(pp, "exactly one of image or filesystem may be set; remove one"))
		case pop.Image == nil && pop.Filesystem == nil:
			errs = append(errs, field.Required(pp, "exactly one of image or filesystem is required"))
		}
		if img := pop.Image; img != nil {
			errs = append(errs, validateImage(img.Name, pp.Child("image", "name"))...)
		}
		if fs := pop.Filesystem; fs != nil && !sets.New(supportedFilesystems...).Has(fs.Type) {
			errs = append(errs, field.NotSupported(pp.Child("filesystem", "type"), fs.Type, supportedFilesystems))
		}
	}
	return errs
}

// BootImage returns the image a disk volume is populated from, in either
// the template shape or the deprecated one; empty when none.
func BootImage(d *computev1alpha.DiskTemplateVolumeSource) string {
	if d == nil {
		return ""
	}
	if t := d.Template; t != nil {
		if pop := t.Spec.Populator; pop != nil && pop.Image != nil {
			return pop.Image.Name
		}
		return ""
	}
	return d.Image
}

// validateNetworkPolicy validates an interface's network policy.
func validateNetworkPolicy(np *computev1alpha.InstanceNetworkInterfaceNetworkPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ip := p.Child("ingress")
	errs = append(errs, maxItems(ip, len(np.Ingress), MaxPolicyRules)...)
	for i, rule := range np.Ingress {
		rp := ip.Index(i)
		errs = append(errs, maxItems(rp.Child("ports"), len(rule.Ports), MaxPolicyEntries)...)
		for j := range rule.Ports {
			errs = append(errs, validatePolicyPort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		errs = append(errs, maxItems(rp.Child("from"), len(rule.From), MaxPolicyEntries)...)
		for j, peer := range rule.From {
			fp := rp.Child("from").Index(j)
			if peer.IPBlock == nil {
				errs = append(errs, field.Required(fp.Child("ipBlock"), "a source needs an ipBlock, e.g. cidr: 203.0.113.0/24"))
				continue
			}
			errs = append(errs, validateIPBlock(peer.IPBlock, fp.Child("ipBlock"))...)
		}
	}
	return errs
}

// validatePolicyPort validates a port or port range of a policy rule.
func validatePolicyPort(port *computev1alpha.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Protocol != nil && !sets.New(supportedProtocols...).Has(string(*port.Protocol)) {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, supportedProtocols))
	}
	pp := p.Child("port")
	named := false
	if port.Port != nil {
		switch port.Port.Type {
		case intstr.Int:
			if v := port.Port.IntVal; v < 1 || v > 65535 {
				errs = append(errs, field.Invalid(pp, v, "must be between 1 and 65535"))
			}
		default:
			named = true
			errs = append(errs, validateName(port.Port.StrVal, pp, utilvalidation.IsValidPortName)...)
		}
	}
	if port.EndPort == nil {
		return errs
	}
	ep := p.Child("endPort")
	switch end := *port.EndPort; {
	case port.Port == nil:
		errs = append(errs, field.Required(pp, "a port range needs a start: set port to a number"))
	case named:
		errs = append(errs, field.Forbidden(ep, "may not be set when port is a named port; use a number"))
	case end < 1 || end > 65535:
		errs = append(errs, field.Invalid(ep, end, "must be between 1 and 65535"))
	case end < port.Port.IntVal:
		errs = append(errs, field.Invalid(ep, end, fmt.Sprintf("must be greater than or equal to port (%d)", port.Port.IntVal)))
	}
	return errs
}

// validateIPBlock validates a CIDR and its exceptions, which must lie
// strictly inside it.
func validateIPBlock(b *computev1alpha.IPBlock, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cp := p.Child("cidr")
	if b.CIDR == "" {
		return field.ErrorList{field.Required(cp, "a CIDR is required, e.g. 203.0.113.0/24 or 2001:db8::/64")}
	}
	outer, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return field.ErrorList{field.Invalid(cp, b.CIDR, "must be a CIDR such as 203.0.113.0/24 or 2001:db8::/64")}
	}
	errs = append(errs, maxItems(p.Child("except"), len(b.Except), MaxPolicyEntries)...)
	for i, ex := range b.Except {
		xp := p.Child("except").Index(i)
		inner, err := netip.ParsePrefix(ex)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(xp, ex, "must be a CIDR such as 203.0.113.0/28"))
		case inner.Addr().Is4() != outer.Addr().Is4():
			errs = append(errs, field.Invalid(xp, ex, "must be of the same address family as cidr "+b.CIDR))
		case inner.Bits() <= outer.Bits() || !outer.Masked().Contains(inner.Addr()):
			errs = append(errs, field.Invalid(xp, ex, "must be strictly inside cidr "+b.CIDR))
		}
	}
	return errs
}

// validateMetrics validates a placement's autoscaling metrics.
func validateMetrics(metrics []computev1alpha.MetricSpec, p *field.Path) field.ErrorList {
	errs := maxItems(p, len(metrics), MaxMetrics)
	seen := sets.New[string]()
	for i, m := range metrics {
		mp := p.Index(i)
		if m.Resource == nil {
			errs = append(errs, field.Required(mp.Child("resource"), "a metric needs a resource, e.g. name: cpu"))
			continue
		}
		rp := mp.Child("resource")
		switch name := string(m.Resource.Name); {
		case !sets.New(supportedResources...).Has(name):
			errs = append(errs, field.NotSupported(rp.Child("name"), name, supportedResources))
		case seen.Has(name):
			errs = append(errs, field.Duplicate(rp.Child("name"), name))
		default:
			seen.Insert(name)
		}
		errs = append(errs, validateMetricTarget(m.Resource.Target, rp.Child("target"))...)
	}
	return errs
}

// validateMetricTarget validates a resource metric's target: exactly one
// of averageValue (a positive quantity) or averageUtilization (1 to
// MaxAverageUtilization percent of the Instances' requests). value, which
// Datum admits, is refused: a resource metric is averaged over the
// Instances, and the cell's autoscaler has no total to compare it with.
func validateMetricTarget(t computev1alpha.MetricTarget, tp *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if t.Value != nil {
		set++
		errs = append(errs, field.Invalid(tp.Child("value"), t.Value.String(),
			"a resource metric is averaged over the Instances: set averageValue (per Instance) or averageUtilization (percent of the request) instead"))
	}
	if t.AverageValue != nil {
		set++
		if t.AverageValue.Sign() <= 0 {
			errs = append(errs, field.Invalid(tp.Child("averageValue"), t.AverageValue.String(), "must be greater than zero"))
		}
	}
	if t.AverageUtilization != nil {
		set++
		if u := *t.AverageUtilization; u < 1 || u > MaxAverageUtilization {
			errs = append(errs, field.Invalid(tp.Child("averageUtilization"), u,
				fmt.Sprintf("must be a percentage of the Instances' requests between 1 and %d", MaxAverageUtilization)))
		}
	}
	switch {
	case set == 0:
		errs = append(errs, field.Required(tp, "exactly one of averageValue or averageUtilization is required"))
	case set > 1:
		errs = append(errs, field.Forbidden(tp, "exactly one of averageValue or averageUtilization may be set"))
	}
	return errs
}
