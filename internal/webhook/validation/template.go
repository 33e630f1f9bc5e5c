package validation

import (
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Bounds of an instance template.
const (
	MaxContainers        = 16
	MaxImageLength       = 1024
	MaxCommand           = 64
	MaxArgs              = 256
	MaxEnv               = 256
	MaxPorts             = 32
	MaxVolumes           = 32
	MaxVolumeAttachments = 32
	MaxNetworkInterfaces = 8
	MaxImagePullSecrets  = 8
)

// supportedResources are the resources requests and limits may name.
var supportedResources = []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory)}

// supportedProtocols are the port protocols.
var supportedProtocols = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}

// validateTemplate validates an instance template at path; namespace is the
// Workload's.
func validateTemplate(tpl *computev1alpha.InstanceTemplateSpec, namespace string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("metadata")
	errs = append(errs, validateMetadataMaps(&tpl.Metadata, mp)...)
	for _, k := range sortedKeys(tpl.Metadata.Labels) {
		if isReserved(k) {
			errs = append(errs, field.Forbidden(mp.Child("labels").Key(k),
				"label keys under compute.datumapis.com/ and meta.datumapis.com/ are set by compute; choose another key"))
		}
	}
	if v, ok := tpl.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]; ok {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, field.Invalid(mp.Child("annotations").Key(computev1alpha.RestartedAtAnnotation), v,
				"must be an RFC 3339 time, e.g. 2026-05-01T12:00:00Z"))
		}
	}
	if ns := tpl.Metadata.Namespace; ns != "" && namespace != "" && ns != namespace {
		errs = append(errs, field.Invalid(mp.Child("namespace"), ns,
			"instances run in the Workload's namespace ("+namespace+"); remove the field or set it to that"))
	}
	if len(tpl.Metadata.Finalizers) > 0 {
		errs = append(errs, field.Forbidden(mp.Child("finalizers"), "compute owns the finalizers of Instances; remove the field"))
	}

	sp := p.Child("spec")
	spec := &tpl.Spec
	if spec.Location != nil {
		errs = append(errs, field.Forbidden(sp.Child("location"), "is set by the cell an instance runs in; leave it empty"))
	}
	if spec.Controller != nil {
		errs = append(errs, field.Forbidden(sp.Child("controller"), "is managed by compute; leave it empty"))
	}
	volumes, volErrs := validateVolumes(spec.Volumes, sp.Child("volumes"))
	errs = append(errs, volErrs...)
	errs = append(errs, validateRuntime(&spec.Runtime, sp.Child("runtime"), volumes)...)
	errs = append(errs, validateNetworkInterfaces(spec.NetworkInterfaces, sp.Child("networkInterfaces"))...)
	return errs
}

// validateMetadataMaps validates the labels and annotations of template
// metadata.
func validateMetadataMaps(m *computev1alpha.TemplateMetadata, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(m.Labels, p.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	if m.Name != "" {
		errs = append(errs, validateName(m.Name, p.Child("name"), utilvalidation.IsDNS1123Subdomain)...)
	}
	return errs
}

// validateRuntime validates the runtime: exactly one of sandbox or virtual
// machine, an instance type from the catalog, consistent ports and volume
// attachments.
func validateRuntime(rt *computev1alpha.InstanceRuntimeSpec, p *field.Path, volumes map[string]*computev1alpha.InstanceVolume) field.ErrorList {
	var errs field.ErrorList
	switch {
	case rt.Sandbox == nil && rt.VirtualMachine == nil:
		errs = append(errs, field.Required(p, "exactly one of sandbox or virtualMachine is required"))
	case rt.Sandbox != nil && rt.VirtualMachine != nil:
		errs = append(errs, field.Forbidden(p.Child("virtualMachine"), "exactly one of sandbox or virtualMachine may be set; remove one"))
	}
	errs = append(errs, validateResources(&rt.Resources, p.Child("resources"))...)
	errs = append(errs, validateRuntimeClass(rt.Class, p.Child("class"))...)
	if rt.Sandbox != nil {
		errs = append(errs, validateSandbox(rt.Sandbox, p.Child("sandbox"), volumes)...)
	}
	if vm := rt.VirtualMachine; vm != nil {
		vp := p.Child("virtualMachine")
		errs = append(errs, validateVMAttachments(vm.VolumeAttachments, vp.Child("volumeAttachments"), volumes)...)
		errs = append(errs, newPortSet().validate(vm.Ports, vp.Child("ports"), "the virtual machine")...)
	}
	return errs
}

// validateResources validates the requests.
func validateResources(r *computev1alpha.InstanceRuntimeResources, p *field.Path) field.ErrorList {
	// The instance type is checked against the catalog by
	// validateInstanceType.
	return validateResourceList(r.Requests, p.Child("requests"))
}

// validateResourceList checks that a resource list names only cpu and
// memory, with positive amounts.
func validateResourceList(list corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(list) {
		q := list[name]
		kp := p.Key(string(name))
		switch {
		case !sets.New(supportedResources...).Has(string(name)):
			errs = append(errs, field.NotSupported(kp, string(name), supportedResources))
		case q.Sign() <= 0:
			errs = append(errs, field.Invalid(kp, q.String(), "must be greater than zero"))
		}
	}
	return errs
}

// validateSandbox validates a sandbox's containers and pull secrets.
func validateSandbox(sb *computev1alpha.SandboxRuntime, p *field.Path, volumes map[string]*computev1alpha.InstanceVolume) field.ErrorList {
	var errs field.ErrorList
	cp := p.Child("containers")
	switch n := len(sb.Containers); {
	case n == 0:
		errs = append(errs, field.Required(cp, "at least one container is required"))
	case n > MaxContainers:
		errs = append(errs, field.TooMany(cp, n, MaxContainers))
	}
	names := sets.New[string]()
	ports := newPortSet()
	for i := range sb.Containers {
		c := &sb.Containers[i]
		ip := cp.Index(i)
		errs = append(errs, validateItemName(c.Name, ip.Child("name"), names, "every container needs a name", utilvalidation.IsDNS1123Label)...)
		errs = append(errs, validateImage(c.Image, ip.Child("image"))...)
		errs = append(errs, maxItems(ip.Child("command"), len(c.Command), MaxCommand)...)
		errs = append(errs, maxItems(ip.Child("args"), len(c.Args), MaxArgs)...)
		errs = append(errs, validateEnv(c.Env, ip.Child("env"))...)
		errs = append(errs, validateEnvFrom(c.EnvFrom, ip.Child("envFrom"))...)
		if sc := c.SecurityContext; sc != nil {
			errs = append(errs, validateSecurityContext(sc, ip.Child("securityContext"))...)
		}
		if r := c.Resources; r != nil {
			errs = append(errs, validateContainerResources(r, ip.Child("resources"))...)
		}
		errs = append(errs, ports.validate(c.Ports, ip.Child("ports"), "container "+c.Name)...)
		errs = append(errs, validateProbes(c, ip)...)
		errs = append(errs, validateMounts(c.VolumeAttachments, ip.Child("volumeAttachments"), volumes)...)
	}

	sp := p.Child("imagePullSecrets")
	errs = append(errs, maxItems(sp, len(sb.ImagePullSecrets), MaxImagePullSecrets)...)
	secrets := sets.New[string]()
	for i, s := range sb.ImagePullSecrets {
		errs = append(errs, validateItemName(s.Name, sp.Index(i).Child("name"), secrets,
			"name the Secret holding the registry credentials", utilvalidation.IsDNS1123Subdomain)...)
	}
	return errs
}

// validateImage checks a container image reference.
func validateImage(image string, p *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(p, "a container image is required, e.g. ghcr.io/org/app:1.0")}
	case len(image) > MaxImageLength:
		return field.ErrorList{field.TooLong(p, "", MaxImageLength)}
	case strings.IndexFunc(image, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return field.ErrorList{field.Invalid(p, image, "must not contain whitespace")}
	case strings.HasPrefix(image, "-") || strings.HasPrefix(image, ":") || strings.HasPrefix(image, "@"):
		return field.ErrorList{field.Invalid(p, image, "must start with a registry or repository name")}
	}
	return nil
}

// validateEnv validates environment variables.
func validateEnv(env []computev1alpha.EnvVar, p *field.Path) field.ErrorList {
	errs := maxItems(p, len(env), MaxEnv)
	seen := sets.New[string]()
	for i := range env {
		e := &env[i]
		errs = append(errs, validateItemName(e.Name, p.Index(i).Child("name"), seen,
			"every environment variable needs a name", utilvalidation.IsEnvVarName)...)
		errs = append(errs, validateEnvSource(&env[i], p.Index(i))...)
	}
	return errs
}

// validateContainerResources checks requests and limits, and that no
// request exceeds its limit.
func validateContainerResources(r *computev1alpha.ContainerResourceRequirements, p *field.Path) field.ErrorList {
	errs := validateResourceList(r.Limits, p.Child("limits"))
	errs = append(errs, validateResourceList(r.Requests, p.Child("requests"))...)
	for _, name := range sortedKeys(r.Requests) {
		req := r.Requests[name]
		limit, ok := r.Limits[name]
		if ok && req.Sign() > 0 && limit.Sign() > 0 && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit (%s)", name, limit.String())))
		}
	}
	return errs
}

// portSet tracks the ports of one instance: names are unique across the
// instance and so are port/protocol pairs, since containers of a sandbox
// share its network.
type portSet struct {
	names map[string]string
	ports map[string]string
}

// newPortSet returns an empty portSet.
func newPortSet() *portSet {
	return &portSet{names: map[string]string{}, ports: map[string]string{}}
}

// validate validates the ports of owner ("container web") and records them.
func (s *portSet) validate(ports []computev1alpha.NamedPort, p *field.Path, owner string) field.ErrorList {
	errs := maxItems(p, len(ports), MaxPorts)
	for i, port := range ports {
		ip := p.Index(i)
		switch prev, dup := s.names[port.Name]; {
		case port.Name == "":
			errs = append(errs, field.Required(ip.Child("name"), "every port needs a name, e.g. http"))
		case dup:
			errs = append(errs, field.Duplicate(ip.Child("name"), port.Name+" (already used by "+prev+")"))
		default:
			errs = append(errs, validateName(port.Name, ip.Child("name"), utilvalidation.IsValidPortName)...)
			s.names[port.Name] = owner
		}
		if port.Port < 1 || port.Port > 65535 {
			errs = append(errs, field.Invalid(ip.Child("port"), port.Port, "must be between 1 and 65535"))
		}
		proto := string(port.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		if !sets.New(supportedProtocols...).Has(proto) {
			errs = append(errs, field.NotSupported(ip.Child("protocol"), port.Protocol, supportedProtocols))
			continue
		}
		key := fmt.Sprintf("%d/%s", port.Port, proto)
		if prev, dup := s.ports[key]; dup {
			errs = append(errs, field.Duplicate(ip.Child("port"), key+" (already used by "+prev+")"))
			continue
		}
		s.ports[key] = owner
	}
	return errs
}

// validateMounts validates a container's volume attachments: each names a
// volume of the instance once, at its own absolute path. A disk may be
// attached without a path (a raw device); a ConfigMap or Secret volume only
// exists as files, so it needs one.
func validateMounts(mounts []computev1alpha.VolumeAttachment, p *field.Path, volumes map[string]*computev1alpha.InstanceVolume) field.ErrorList {
	errs := validateAttachmentNames(mounts, p, volumes)
	paths := sets.New[string]()
	for i, m := range mounts {
		mp := p.Index(i).Child("mountPath")
		switch v := volumes[m.Name]; {
		case m.MountPath == nil || *m.MountPath == "":
			if v != nil && v.Disk == nil {
				errs = append(errs, field.Required(mp, "a ConfigMap or Secret volume is files: say where the container mounts them, e.g. /etc/app"))
			}
		case !strings.HasPrefix(*m.MountPath, "/"):
			errs = append(errs, field.Invalid(mp, *m.MountPath, "must be an absolute path"))
		case paths.Has(path.Clean(*m.MountPath)):
			errs = append(errs, field.Duplicate(mp, *m.MountPath))
		default:
			paths.Insert(path.Clean(*m.MountPath))
		}
	}
	return errs
}

// validateVMAttachments validates a virtual machine's volume attachments:
// at least one, the first being a disk with an image to boot from.
func validateVMAttachments(atts []computev1alpha.VolumeAttachment, p *field.Path, volumes map[string]*computev1alpha.InstanceVolume) field.ErrorList {
	var errs field.ErrorList
	if len(atts) == 0 {
		return field.ErrorList{field.Required(p, "a virtual machine needs a boot volume: attach a disk volume populated from an image")}
	}
	errs = append(errs, validateAttachmentNames(atts, p, volumes)...)
	boot, ok := volumes[atts[0].Name]
	switch {
	case !ok:
		// Reported by validateAttachmentNames.
	case boot.Disk == nil:
		errs = append(errs, field.Invalid(p.Index(0).Child("name"), atts[0].Name,
			"the first attachment is the boot volume and must be a disk volume"))
	case BootImage(boot.Disk) == "":
		errs = append(errs, field.Invalid(p.Index(0).Child("name"), atts[0].Name,
			"the boot disk needs an image to boot from (spec.template.spec.volumes[].disk.template.spec.populator.image.name)"))
	}
	return errs
}

// validateAttachmentNames checks that attachments name existing volumes,
// each at most once.
func validateAttachmentNames(atts []computev1alpha.VolumeAttachment, p *field.Path, volumes map[string]*computev1alpha.InstanceVolume) field.ErrorList {
	errs := maxItems(p, len(atts), MaxVolumeAttachments)
	seen := sets.New[string]()
	for i, a := range atts {
		np := p.Index(i).Child("name")
		switch _, ok := volumes[a.Name]; {
		case a.Name == "":
			errs = append(errs, field.Required(np, "name a volume of spec.template.spec.volumes"))
		case !ok:
			errs = append(errs, field.NotFound(np, a.Name))
		case seen.Has(a.Name):
			errs = append(errs, field.Duplicate(np, a.Name))
		}
		seen.Insert(a.Name)
	}
	return errs
}

// validateVolumes validates the instance volumes and returns them by name.
func validateVolumes(vols []computev1alpha.InstanceVolume, p *field.Path) (map[string]*computev1alpha.InstanceVolume, field.ErrorList) {
	errs := maxItems(p, len(vols), MaxVolumes)
	byName := map[string]*computev1alpha.InstanceVolume{}
	for i := range vols {
		v := &vols[i]
		vp := p.Index(i)
		switch _, dup := byName[v.Name]; {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), "every volume needs a name"))
		case dup:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		default:
			errs = append(errs, validateName(v.Name, vp.Child("name"), utilvalidation.IsDNS1123Label)...)
			byName[v.Name] = v
		}
		errs = append(errs, validateVolumeSource(v, vp)...)
	}
	return byName, errs
}

// validateVolumeSource checks that a volume has exactly one valid source.
func validateVolumeSource(v *computev1alpha.InstanceVolume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sources := 0
	if d := v.Disk; d != nil {
		sources++
		errs = append(errs, validateDiskSource(d, p.Child("disk"))...)
	}
	if c := v.ConfigMap; c != nil {
		sources++
		errs = append(errs, validateConfigMapSource(c, p.Child("configMap"))...)
	}
	if s := v.Secret; s != nil {
		sources++
		errs = append(errs, validateSecretSource(s, p.Child("secret"))...)
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Required(p, "exactly one of disk, configMap or secret is required"))
	case sources > 1:
		errs = append(errs, field.Forbidden(p, "exactly one of disk, configMap or secret may be set"))
	}
	return sortErrors(errs)
}

// validateNetworkInterfaces validates the network interfaces: each names a
// network once, has its own name, and carries valid address families,
// address requests, reclaim policy and network policy.
func validateNetworkInterfaces(nics []computev1alpha.InstanceNetworkInterface, p *field.Path) field.ErrorList {
	errs := maxItems(p, len(nics), MaxNetworkInterfaces)
	seen := sets.New[string]()
	names := sets.New[string]()
	for i, nic := range nics {
		ip := p.Index(i)
		errs = append(errs, validateInterfaceFields(&nics[i], ip, names)...)
		np := ip.Child("network", "name")
		key := nic.Network.Namespace + "/" + nic.Network.Name
		switch {
		case nic.Network.Name == "":
			errs = append(errs, field.Required(np, "name the network to attach to"))
		case seen.Has(key):
			errs = append(errs, field.Duplicate(np, nic.Network.Name))
		default:
			errs = append(errs, validateName(nic.Network.Name, np, utilvalidation.IsDNS1123Subdomain)...)
		}
		seen.Insert(key)
		if ns := nic.Network.Namespace; ns != "" {
			errs = append(errs, validateName(ns, ip.Child("network", "namespace"), utilvalidation.IsDNS1123Label)...)
		}
		if pol := nic.NetworkPolicy; pol != nil {
			errs = append(errs, validateNetworkPolicy(pol, ip.Child("networkPolicy"))...)
		}
	}
	return errs
}

// UnusedVolumes returns the names of volumes no container or virtual machine
// attaches, for a warning.
func UnusedVolumes(spec *computev1alpha.InstanceSpec) []string {
	used := sets.New[string]()
	if sb := spec.Runtime.Sandbox; sb != nil {
		for _, c := range sb.Containers {
			for _, a := range c.VolumeAttachments {
				used.Insert(a.Name)
			}
		}
	}
	if vm := spec.Runtime.VirtualMachine; vm != nil {
		for _, a := range vm.VolumeAttachments {
			used.Insert(a.Name)
		}
	}
	var out []string
	for _, v := range spec.Volumes {
		if v.Name != "" && !used.Has(v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}
