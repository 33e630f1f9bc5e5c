package validation

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Bounds of the fields Datum added to the instance template.
const (
	MaxEnvFrom            = 32
	MaxCapabilities       = 64
	MaxInterfaceName      = 15
	MaxIPFamilies         = 2
	MaxAddressRequests    = 4
	MaxAddressClassLength = 63
	MaxRuntimeClassLength = 253
)

// GrantedCapabilities are the Linux capabilities a container may add: the
// cell's security profile, Kubernetes' Pod Security "baseline" level
// (every instance of a cell shares the node's kernel, so compute's one
// runtime tier keeps its grant within that profile, as Datum asks of a
// class that shares the host kernel). Each is in a container runtime's
// default set already; adding one gives it back after a drop.
var GrantedCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// capabilityName is a capability as the Kubernetes shape writes it: upper
// case letters, digits and underscores, without the CAP_ prefix.
var capabilityName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// seccompProfileTypes are the profiles a container may choose.
var seccompProfileTypes = []string{string(computev1alpha.SeccompProfileTypeRuntimeDefault), string(computev1alpha.SeccompProfileTypeUnconfined)}

// validateEnvFrom validates a container's envFrom: exactly one of
// configMapRef or secretRef per source, each naming an object of the
// Workload's namespace, and a prefix that is a C identifier.
func validateEnvFrom(sources []computev1alpha.EnvFromSource, p *field.Path) field.ErrorList {
	errs := maxItems(p, len(sources), MaxEnvFrom)
	for i := range sources {
		s := &sources[i]
		ip := p.Index(i)
		if s.Prefix != "" {
			errs = append(errs, validateName(s.Prefix, ip.Child("prefix"), utilvalidation.IsCIdentifier)...)
		}
		switch {
		case s.ConfigMapRef == nil && s.SecretRef == nil:
			errs = append(errs, field.Required(ip, "exactly one of configMapRef or secretRef is required"))
		case s.ConfigMapRef != nil && s.SecretRef != nil:
			errs = append(errs, field.Forbidden(ip, "exactly one of configMapRef or secretRef may be set; remove one"))
		}
		if r := s.ConfigMapRef; r != nil {
			errs = append(errs, validateObjectName(r.Name, "ConfigMap", ip.Child("configMapRef", "name"))...)
		}
		if r := s.SecretRef; r != nil {
			errs = append(errs, validateObjectName(r.Name, "Secret", ip.Child("secretRef", "name"))...)
		}
	}
	return errs
}

// validateSecurityContext validates a container's security options: added
// capabilities are named ones the runtime grants (never ALL), dropped ones
// are capability names or ALL, and the seccomp profile is one of the closed
// set.
func validateSecurityContext(sc *computev1alpha.SecurityContext, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c := sc.Capabilities; c != nil {
		cp := p.Child("capabilities")
		ap := cp.Child("add")
		errs = append(errs, maxItems(ap, len(c.Add), MaxCapabilities)...)
		granted := sets.New(GrantedCapabilities...)
		seen := sets.New[string]()
		for i, capability := range c.Add {
			name := strings.TrimPrefix(string(capability), "CAP_")
			switch {
			case name == "ALL":
				errs = append(errs, field.Forbidden(ap.Index(i),
					"ALL may not be added: name each capability the container needs ("+strings.Join(GrantedCapabilities, ", ")+")"))
			case seen.Has(name):
				errs = append(errs, field.Duplicate(ap.Index(i), string(capability)))
			case !granted.Has(name):
				errs = append(errs, field.NotSupported(ap.Index(i), string(capability), GrantedCapabilities))
			}
			seen.Insert(name)
		}
		dp := cp.Child("drop")
		errs = append(errs, maxItems(dp, len(c.Drop), MaxCapabilities)...)
		for i, capability := range c.Drop {
			if name := strings.TrimPrefix(string(capability), "CAP_"); !capabilityName.MatchString(name) {
				errs = append(errs, field.Invalid(dp.Index(i), string(capability),
					"must be a capability name such as NET_RAW (upper case, without CAP_), or ALL"))
			}
		}
	}
	if sp := sc.SeccompProfile; sp != nil {
		switch tp := p.Child("seccompProfile", "type"); {
		case sp.Type == computev1alpha.SeccompProfileTypeUnconfined:
			// Datum's schema admits it; compute's container cells run
			// tenants on a shared kernel at Pod Security baseline, which
			// forbids it, so it is refused here rather than at the cell.
			errs = append(errs, field.Forbidden(tp, "Unconfined may not be used: instances share a kernel with other tenants; "+
				"use RuntimeDefault or leave seccompProfile out"))
		case !sets.New(seccompProfileTypes...).Has(string(sp.Type)):
			errs = append(errs, field.NotSupported(tp, sp.Type, seccompProfileTypes))
		}
	}
	return errs
}

// validateRuntimeClass validates the form of runtime.class: the name of a
// RuntimeClass (a cluster-scoped object), or empty for the default.
func validateRuntimeClass(class string, p *field.Path) field.ErrorList {
	switch {
	case class == "":
		return nil
	case len(class) > MaxRuntimeClassLength:
		return field.ErrorList{field.TooLong(p, "", MaxRuntimeClassLength)}
	}
	return validateName(class, p, utilvalidation.IsDNS1123Subdomain)
}

// interfaceName returns the name of a network interface: its own, or the
// default the API server writes when it has none.
func interfaceName(nic *computev1alpha.InstanceNetworkInterface) string {
	if nic.Name == "" {
		return computev1alpha.DefaultInterfaceName
	}
	return nic.Name
}

// validateInterfaceFields validates an interface's name, address families,
// address requests and reclaim policy, as Datum's schema does. names are
// the interface names seen so far (the list is keyed by name).
func validateInterfaceFields(nic *computev1alpha.InstanceNetworkInterface, p *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	np := p.Child("name")
	switch name := interfaceName(nic); {
	case names.Has(name) && nic.Name == "":
		errs = append(errs, field.Required(np, fmt.Sprintf("an interface without a name is %s, which another interface is already named; name every interface, e.g. eth0, eth1", name)))
	case names.Has(name):
		errs = append(errs, field.Duplicate(np, name))
	case len(name) > MaxInterfaceName:
		errs = append(errs, field.TooLong(np, "", MaxInterfaceName))
	default:
		errs = append(errs, validateName(name, np, utilvalidation.IsDNS1123Label)...)
	}
	names.Insert(interfaceName(nic))

	fp := p.Child("ipFamilies")
	errs = append(errs, maxItems(fp, len(nic.IPFamilies), MaxIPFamilies)...)
	families := []string{string(computev1alpha.IPv4), string(computev1alpha.IPv6)}
	seen := sets.New[computev1alpha.IPFamily]()
	for i, f := range nic.IPFamilies {
		if !sets.New(families...).Has(string(f)) {
			errs = append(errs, field.NotSupported(fp.Index(i), f, families))
		}
		seen.Insert(f)
	}
	if seen.Len() < len(nic.IPFamilies) {
		errs = append(errs, field.Invalid(fp, familyList(nic.IPFamilies), "Each address family may be requested at most once"))
	}

	ap := p.Child("addresses")
	errs = append(errs, maxItems(ap, len(nic.Addresses), MaxAddressRequests)...)
	classes := sets.New[string]()
	for i, a := range nic.Addresses {
		cp := ap.Index(i).Child("class")
		switch {
		case a.Class == "":
			errs = append(errs, field.Required(cp, "name the kind of address to allocate, e.g. public-ipv4"))
		case len(a.Class) > MaxAddressClassLength:
			errs = append(errs, field.TooLong(cp, "", MaxAddressClassLength))
		case classes.Has(a.Class):
			errs = append(errs, field.Invalid(cp, a.Class, "Each address class may be requested at most once"))
		default:
			errs = append(errs, validateName(a.Class, cp, utilvalidation.IsDNS1123Label)...)
		}
		classes.Insert(a.Class)
	}

	policies := []string{string(computev1alpha.ReclaimDelete), string(computev1alpha.ReclaimRetain)}
	if r := nic.ReclaimPolicy; r != "" && !sets.New(policies...).Has(string(r)) {
		errs = append(errs, field.NotSupported(p.Child("reclaimPolicy"), r, policies))
	}
	return errs
}

// familyList renders address families as the value of an error.
func familyList(fs []computev1alpha.IPFamily) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return "[" + strings.Join(out, ", ") + "]"
}
