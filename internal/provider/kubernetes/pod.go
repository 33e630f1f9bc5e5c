package kubernetes

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/ownerref"
	"github.com/citycells/compute/internal/quota/sizing"
	"github.com/citycells/compute/internal/referenceddata"
	admission "github.com/citycells/compute/internal/webhook/validation"
)

// InstanceLabel marks every Pod the provider runs, naming its Instance
// (shortened with a hash when the name is too long for a label value). The
// manager caches only Pods that carry it (CacheByObject).
const InstanceLabel = "compute.datumapis.com/instance"

// TemplateHashAnnotation on a Pod is the template hash of the Instance it
// was built from: the provider replaces a Pod whose hash is not the
// Instance's, and reports it as status.controller.observedTemplateHash.
const TemplateHashAnnotation = "compute.datumapis.com/template-hash"

// ErrVirtualMachine is the configuration error of a virtual-machine
// Instance.
var ErrVirtualMachine = errors.New("the kubernetes runtime provider runs containers only: it cannot boot a virtual machine")

// reference is a ConfigMap or Secret of the cell a Pod cannot start
// without. Pods read the companions (referenceddata.CompanionName:
// `configmap.<name>`, `secret.<name>`, Datum's names), never the project's
// names, so an object of the cell's own can never be read by mistake.
type reference struct {
	// kind is referenceddata.KindConfigMap or referenceddata.KindSecret.
	kind string
	// object is the name of the cell's object (the companion).
	object string
	// source is the name of the project's object it carries; "" when the
	// Instance does not say.
	source string
}

func (r reference) String() string { return fmt.Sprintf("%s %q", r.kind, r.object) }

// podWithTypes builds the Pod that runs inst, sized from the cell's
// InstanceType catalog types, or returns why the provider cannot run it (a
// configuration error: the message says what to change). ratio
// is the allocation ratio (see Reconciler.AllocationRatio): each
// container's limits are its size, its requests the size divided by ratio;
// a ratio below 1 (or not a number) counts as 1. It is pure: the same
// Instance and ratio always give the same Pod.
func podWithTypes(inst *computev1alpha.Instance, types catalog.Catalog, ratio float64) (*corev1.Pod, error) {
	rt := &inst.Spec.Runtime
	switch {
	case rt.VirtualMachine != nil:
		return nil, ErrVirtualMachine
	case rt.Sandbox == nil:
		return nil, errors.New("the instance has no sandbox: the kubernetes runtime provider runs containers only")
	case len(rt.Sandbox.Containers) == 0:
		return nil, errors.New("the sandbox has no containers")
	}
	sb := rt.Sandbox
	resources, err := containerResources(inst, types)
	if err != nil {
		return nil, err
	}
	volumes, err := podVolumes(inst)
	if err != nil {
		return nil, err
	}
	containers := make([]corev1.Container, 0, len(sb.Containers))
	for i := range sb.Containers {
		c, err := container(&sb.Containers[i], volumes)
		if err != nil {
			return nil, err
		}
		c.Resources = corev1.ResourceRequirements{Requests: requests(resources[i], ratio), Limits: resources[i]}
		// The instance's own facts come first, so a variable of the
		// template with the same name (the later one) wins.
		c.Env = append(instanceEnv(inst), c.Env...)
		containers = append(containers, c)
	}
	pullSecrets, err := imagePullSecrets(sb.ImagePullSecrets)
	if err != nil {
		return nil, err
	}
	if len(pullSecrets) > 0 {
		// A private image is pulled with the instance's own credentials
		// every time: on a node shared by tenants, a cached copy would
		// run for anyone who names it.
		for i := range containers {
			containers[i].ImagePullPolicy = corev1.PullAlways
		}
	}

	labels := make(map[string]string, len(inst.Labels)+1)
	for k, v := range inst.Labels {
		labels[k] = v
	}
	labels[InstanceLabel] = labelValue(inst.Name)
	owner := ownerref.Instance(inst)
	owner.BlockOwnerDeletion = ptr.To(true)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            inst.Name,
			Namespace:       inst.Namespace,
			Labels:          labels,
			Annotations:     map[string]string{TemplateHashAnnotation: templateHash(inst)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			Containers:                   containers,
			Volumes:                      usedVolumes(volumes, sb.Containers),
			ImagePullSecrets:             pullSecrets,
			RestartPolicy:                corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
		},
	}, nil
}

// imagePullSecrets returns the cell's companions of the project's image
// pull secrets; none when there are none.
func imagePullSecrets(refs []computev1alpha.LocalSecretReference) ([]corev1.LocalObjectReference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]corev1.LocalObjectReference, 0, len(refs))
	for _, s := range refs {
		if s.Name == "" {
			return nil, errors.New("an image pull secret has no name")
		}
		out = append(out, corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindSecret, s.Name)})
	}
	return out, nil
}

// container builds the Pod container of a sandbox container.
func container(c *computev1alpha.SandboxContainer, volumes map[string]corev1.Volume) (corev1.Container, error) {
	out := corev1.Container{
		Name:    c.Name,
		Image:   c.Image,
		Command: slices.Clone(c.Command),
		Args:    slices.Clone(c.Args),
	}
	for i := range c.Env {
		e, err := envVar(c.Name, &c.Env[i])
		if err != nil {
			return corev1.Container{}, err
		}
		out.Env = append(out.Env, e)
	}
	for _, src := range c.EnvFrom {
		e, err := envFrom(c.Name, &src)
		if err != nil {
			return corev1.Container{}, err
		}
		out.EnvFrom = append(out.EnvFrom, e)
	}
	sc, err := securityContext(c.Name, c.SecurityContext)
	if err != nil {
		return corev1.Container{}, err
	}
	out.SecurityContext = sc
	for _, p := range c.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out.Ports = append(out.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: proto})
	}
	for _, a := range c.VolumeAttachments {
		if _, ok := volumes[a.Name]; !ok {
			return corev1.Container{}, fmt.Errorf("container %q attaches volume %q, which the instance does not define", c.Name, a.Name)
		}
		if a.MountPath == nil || *a.MountPath == "" {
			return corev1.Container{}, fmt.Errorf("container %q attaches volume %q without a mount path", c.Name, a.Name)
		}
		out.VolumeMounts = append(out.VolumeMounts, corev1.VolumeMount{Name: a.Name, MountPath: *a.MountPath, ReadOnly: true})
	}
	if err := probes(c, &out); err != nil {
		return corev1.Container{}, err
	}
	return out, nil
}

// Environment variables every container of an instance gets, before its
// template's own.
const (
	// EnvCityCode is the city the instance runs in.
	EnvCityCode = "COMPUTE_CITY_CODE"
	// EnvInstanceName is the instance's name.
	EnvInstanceName = "COMPUTE_INSTANCE_NAME"
)

// instanceEnv returns the variables that tell a container where it runs.
func instanceEnv(inst *computev1alpha.Instance) []corev1.EnvVar {
	out := []corev1.EnvVar{{Name: EnvInstanceName, Value: inst.Name}}
	if city := inst.Labels[computev1alpha.CityCodeLabel]; city != "" {
		out = append(out, corev1.EnvVar{Name: EnvCityCode, Value: city})
	}
	return out
}

// envVar builds a Pod environment variable; values read from a ConfigMap
// or Secret read its companion in the cell.
func envVar(container string, e *computev1alpha.EnvVar) (corev1.EnvVar, error) {
	out := corev1.EnvVar{Name: e.Name, Value: e.Value}
	src := e.ValueFrom
	switch {
	case src == nil:
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		out.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindConfigMap, ref.Name)},
			Key:                  ref.Key,
			Optional:             ptr.To(ptr.Deref(ref.Optional, false)),
		}}
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		out.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindSecret, ref.Name)},
			Key:                  ref.Key,
			Optional:             ptr.To(ptr.Deref(ref.Optional, false)),
		}}
	case src.FieldRef != nil || src.ResourceFieldRef != nil:
		return corev1.EnvVar{}, fmt.Errorf("environment variable %q of container %q reads a pod field (fieldRef or resourceFieldRef), which an instance cannot: use a literal value, a ConfigMap or a Secret", e.Name, container)
	default:
		return corev1.EnvVar{}, fmt.Errorf("environment variable %q of container %q has an empty valueFrom: name a ConfigMap or Secret key", e.Name, container)
	}
	return out, nil
}

// envFrom builds a Pod envFrom source; it reads the companion in the cell
// of the ConfigMap or Secret.
func envFrom(container string, src *computev1alpha.EnvFromSource) (corev1.EnvFromSource, error) {
	out := corev1.EnvFromSource{Prefix: src.Prefix}
	switch {
	case src.ConfigMapRef != nil && src.ConfigMapRef.Name != "":
		out.ConfigMapRef = &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindConfigMap, src.ConfigMapRef.Name)},
			Optional:             ptr.To(ptr.Deref(src.ConfigMapRef.Optional, false)),
		}
	case src.SecretRef != nil && src.SecretRef.Name != "":
		out.SecretRef = &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindSecret, src.SecretRef.Name)},
			Optional:             ptr.To(ptr.Deref(src.SecretRef.Optional, false)),
		}
	default:
		return corev1.EnvFromSource{}, fmt.Errorf("an envFrom source of container %q names no ConfigMap or Secret", container)
	}
	return out, nil
}

// securityContext builds a container's security context from the one the
// instance states; nil when it states none, so the Pod runs with the
// runtime's defaults, as it did before the field existed. Capabilities are
// passed without a CAP_ prefix, as Kubernetes writes them. The cell does
// not trust the template: an added capability outside the grant
// (admission.GrantedCapabilities) or an Unconfined seccomp profile is
// refused here as admission refuses it, so a project plane without compute's
// webhooks cannot put them into a Pod that shares a kernel with other
// tenants.
func securityContext(container string, sc *computev1alpha.SecurityContext) (*corev1.SecurityContext, error) {
	if sc == nil {
		return nil, nil
	}
	out := &corev1.SecurityContext{AllowPrivilegeEscalation: copyPtr(sc.AllowPrivilegeEscalation)}
	if c := sc.Capabilities; c != nil {
		for _, add := range capabilities(c.Add) {
			if !slices.Contains(admission.GrantedCapabilities, string(add)) {
				return nil, fmt.Errorf("container %q adds capability %s, which instances sharing this cell's kernel may not have (granted: %s)",
					container, add, strings.Join(admission.GrantedCapabilities, ", "))
			}
		}
		out.Capabilities = &corev1.Capabilities{Add: capabilities(c.Add), Drop: capabilities(c.Drop)}
	}
	if p := sc.SeccompProfile; p != nil {
		if p.Type != computev1alpha.SeccompProfileTypeRuntimeDefault {
			return nil, fmt.Errorf("container %q asks for seccomp profile %s; instances sharing this cell's kernel run RuntimeDefault", container, p.Type)
		}
		out.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return out, nil
}

// capabilities converts capability names, without their CAP_ prefix.
func capabilities(in []computev1alpha.Capability) []corev1.Capability {
	if in == nil {
		return nil
	}
	out := make([]corev1.Capability, len(in))
	for i, c := range in {
		out[i] = corev1.Capability(strings.TrimPrefix(string(c), "CAP_"))
	}
	return out
}

// podVolumes builds the Pod volumes of an Instance's ConfigMap and Secret
// volumes, by name; a disk volume a container attaches is an error (a Pod
// here has no disks), one nobody attaches is left out.
func podVolumes(inst *computev1alpha.Instance) (map[string]corev1.Volume, error) {
	attached := map[string]string{}
	for _, c := range inst.Spec.Runtime.Sandbox.Containers {
		for _, a := range c.VolumeAttachments {
			if _, ok := attached[a.Name]; !ok {
				attached[a.Name] = c.Name
			}
		}
	}
	out := map[string]corev1.Volume{}
	for i := range inst.Spec.Volumes {
		v := &inst.Spec.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.Name == "" {
				return nil, fmt.Errorf("volume %q names no ConfigMap", v.Name)
			}
			out[v.Name] = corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: referenceddata.CompanionName(referenceddata.KindConfigMap, v.ConfigMap.Name)},
				Items:                keyPaths(v.ConfigMap.Items),
				DefaultMode:          copyPtr(v.ConfigMap.DefaultMode),
				Optional:             ptr.To(ptr.Deref(v.ConfigMap.Optional, false)),
			}}}
		case v.Secret != nil:
			name := v.Secret.SecretName
			if name == "" {
				name = v.Secret.Name
			}
			if name == "" {
				return nil, fmt.Errorf("volume %q names no Secret", v.Name)
			}
			out[v.Name] = corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName:  referenceddata.CompanionName(referenceddata.KindSecret, name),
				Items:       keyPaths(v.Secret.Items),
				DefaultMode: copyPtr(v.Secret.DefaultMode),
				Optional:    ptr.To(ptr.Deref(v.Secret.Optional, false)),
			}}}
		case v.Disk != nil:
			if c, ok := attached[v.Name]; ok {
				return nil, fmt.Errorf("container %q attaches disk volume %q: the kubernetes runtime provider mounts ConfigMap and Secret volumes only", c, v.Name)
			}
		default:
			if c, ok := attached[v.Name]; ok {
				return nil, fmt.Errorf("container %q attaches volume %q, which has no source", c, v.Name)
			}
		}
	}
	return out, nil
}

// usedVolumes returns the volumes the containers attach, in the order they
// first attach them: a volume nobody mounts would only be one more thing
// for the Pod to wait for.
func usedVolumes(volumes map[string]corev1.Volume, containers []computev1alpha.SandboxContainer) []corev1.Volume {
	var out []corev1.Volume
	seen := map[string]bool{}
	for _, c := range containers {
		for _, a := range c.VolumeAttachments {
			if v, ok := volumes[a.Name]; ok && !seen[a.Name] {
				seen[a.Name] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// containerResources returns each container's limits, the size sizing.Resolve
// gives it (the rule quota claims by, so the Pod gets what the Instance
// claims): its own limit, else its own request, else an even share of
// what the others leave of the instance's size.
func containerResources(inst *computev1alpha.Instance, types catalog.Catalog) ([]corev1.ResourceList, error) {
	sizes, err := sizing.Resolve(&inst.Spec.Runtime, types)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.ResourceList, len(sizes.Containers))
	for i, s := range sizes.Containers {
		out[i] = s.Limits()
	}
	return out, nil
}

// requests returns what a container of size limits requests at an
// allocation ratio: the limits themselves at 1 (a Guaranteed Pod), else
// each divided by ratio, rounded up (memory to the MiB), never below one
// unit nor above the limit.
func requests(limits corev1.ResourceList, ratio float64) corev1.ResourceList {
	if !(ratio > 1) || math.IsInf(ratio, 0) {
		return limits.DeepCopy()
	}
	out := corev1.ResourceList{}
	for name, q := range limits {
		n := amount(name, q)
		r := int64(math.Ceil(float64(n) / ratio))
		if name == corev1.ResourceMemory && n >= sizing.Mebibyte {
			r = (r + sizing.Mebibyte - 1) / sizing.Mebibyte * sizing.Mebibyte
		}
		out[name] = quantity(name, min(max(r, 1), n))
	}
	return out
}

// amount returns a quantity in the unit of its resource: millicores or
// bytes.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// quantity is the inverse of amount.
func quantity(name corev1.ResourceName, n int64) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(n, resource.DecimalSI)
	}
	return *resource.NewQuantity(n, resource.BinarySI)
}

// references returns the ConfigMaps and Secrets of the cell the Pod built
// for inst cannot start without (those not marked optional), sorted and
// without repeats, each with the project object it carries.
func references(inst *computev1alpha.Instance, pod *corev1.Pod) []reference {
	sources := map[string]string{}
	for _, r := range referenceddata.Refs(&inst.Spec) {
		sources[referenceddata.CompanionName(r.Kind, r.Name)] = r.Name
	}
	seen := map[reference]bool{}
	add := func(kind, name string, optional *bool) {
		if name != "" && !ptr.Deref(optional, false) {
			seen[reference{kind: kind, object: name, source: sources[name]}] = true
		}
	}
	visitPodReferences(&pod.Spec, add)
	out := make([]reference, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b reference) int {
		return strings.Compare(a.kind+"/"+a.object, b.kind+"/"+b.object)
	})
	return out
}

// visitPodReferences calls visit for every ConfigMap and Secret a Pod of
// spec reads: volumes, environment (whole objects and keys) and image pull
// secrets, with the reference's optional flag (nil for pull secrets).
func visitPodReferences(spec *corev1.PodSpec, visit func(kind, name string, optional *bool)) {
	for _, v := range spec.Volumes {
		if cm := v.ConfigMap; cm != nil {
			visit(referenceddata.KindConfigMap, cm.Name, cm.Optional)
		}
		if s := v.Secret; s != nil {
			visit(referenceddata.KindSecret, s.SecretName, s.Optional)
		}
	}
	for i := range spec.Containers {
		visitContainerReferences(&spec.Containers[i], visit)
	}
	for _, s := range spec.ImagePullSecrets {
		visit(referenceddata.KindSecret, s.Name, nil)
	}
}

// visitContainerReferences calls visit for every ConfigMap and Secret
// container c reads its environment from (see visitPodReferences).
func visitContainerReferences(c *corev1.Container, visit func(kind, name string, optional *bool)) {
	for _, e := range c.EnvFrom {
		if r := e.ConfigMapRef; r != nil {
			visit(referenceddata.KindConfigMap, r.Name, r.Optional)
		}
		if r := e.SecretRef; r != nil {
			visit(referenceddata.KindSecret, r.Name, r.Optional)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			visit(referenceddata.KindConfigMap, r.Name, r.Optional)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			visit(referenceddata.KindSecret, r.Name, r.Optional)
		}
	}
}

// templateHash returns the template hash an Instance was created from.
func templateHash(inst *computev1alpha.Instance) string {
	if inst.Spec.Controller == nil {
		return ""
	}
	return inst.Spec.Controller.TemplateHash
}

// labelValue returns name as a label value: itself when it is one,
// otherwise its first characters and a hash of the whole.
func labelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	suffix := fmt.Sprintf("%08x", h.Sum32())
	keep := make([]byte, 0, validation.LabelValueMaxLength)
	for i := 0; i < len(name) && len(keep) < validation.LabelValueMaxLength-len(suffix)-1; i++ {
		if c := name[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' {
			keep = append(keep, c)
		}
	}
	prefix := strings.TrimRight(strings.TrimLeft(string(keep), "-._"), "-._")
	if prefix == "" {
		return suffix
	}
	return prefix + "-" + suffix
}

// keyPaths copies projected keys.
func keyPaths(items []corev1.KeyToPath) []corev1.KeyToPath {
	if items == nil {
		return nil
	}
	out := make([]corev1.KeyToPath, len(items))
	for i := range items {
		items[i].DeepCopyInto(&out[i])
	}
	return out
}

// copyPtr copies a pointed-to value.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}
