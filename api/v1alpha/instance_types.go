package v1alpha

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// InstanceSpec is the desired state of an Instance: what to run and where.
type InstanceSpec struct {
	// Runtime is what the instance runs: exactly one of a container sandbox
	// or a virtual machine, with the resources it is allocated.
	//
	// +required
	Runtime InstanceRuntimeSpec `json:"runtime"`

	// NetworkInterfaces attach the instance to networks. An instance without
	// interfaces gets the platform's default network.
	//
	// Keyed by interface name (Datum's shape), so an interface keeps its
	// identity across updates to the rest of the list. An interface without
	// a name is eth0, so two interfaces must be named.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	NetworkInterfaces []InstanceNetworkInterface `json:"networkInterfaces,omitempty"`

	// Volumes that can be attached to the instance's containers or virtual
	// machine by name.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Volumes []InstanceVolume `json:"volumes,omitempty"`

	// Location the instance has been scheduled to. Set by the cell.
	//
	// +optional
	Location *LocationReference `json:"location,omitempty"`

	// Controller holds settings owned by the controller managing the
	// instance.
	//
	// +optional
	Controller *InstanceController `json:"controller,omitempty"`
}

// InstanceController holds the fields the WorkloadDeployment controller owns
// on an Instance.
type InstanceController struct {
	// TemplateHash is the hash of the instance template the instance was
	// created from.
	//
	// +required
	// +kubebuilder:validation:MaxLength=63
	TemplateHash string `json:"templateHash"`

	// SchedulingGates hold the instance until each is removed: Quota until
	// quota is granted, Network until the network is ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	SchedulingGates []SchedulingGate `json:"schedulingGates,omitempty"`
}

// SchedulingGate is one reason an instance may not run yet.
type SchedulingGate struct {
	// Name of the gate.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// InstanceRuntimeSpec describes what the instance runs.
//
// +kubebuilder:validation:XValidation:rule="has(self.sandbox) != has(self.virtualMachine)",message="exactly one of sandbox or virtualMachine must be set"
type InstanceRuntimeSpec struct {
	// Resources each instance is allocated.
	//
	// +required
	Resources InstanceRuntimeResources `json:"resources"`

	// Sandbox is a managed, isolated environment that runs containers.
	//
	// +optional
	Sandbox *SandboxRuntime `json:"sandbox,omitempty"`

	// VirtualMachine boots a full operating system from a volume.
	//
	// +optional
	VirtualMachine *VirtualMachineRuntime `json:"virtualMachine,omitempty"`

	// Class names the execution tier (a RuntimeClass of Datum's catalog)
	// the instance runs in; empty selects the catalog's default. Compute
	// carries it to the cells and validates its form; compute has no
	// RuntimeClass catalog, and its runtime providers run every instance
	// in the one tier their cell offers (see docs/api.md).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class,omitempty"`
}

// InstanceRuntimeResources selects an instance type and adjusts it.
type InstanceRuntimeResources struct {
	// InstanceType names an instance type from the catalog, for example
	// `datumcloud/d1-standard-2` (1 vCPU, 2 GiB).
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	InstanceType string `json:"instanceType"`

	// Requests adjust the resources the instance type defines (cpu, memory).
	//
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// SandboxRuntime runs containers.
type SandboxRuntime struct {
	// Containers to run in the sandbox; at least one.
	//
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Containers []SandboxContainer `json:"containers"`

	// ImagePullSecrets name secrets in the same namespace used to pull the
	// containers' images.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=8
	ImagePullSecrets []LocalSecretReference `json:"imagePullSecrets,omitempty"`
}

// SandboxContainer is one container of a sandbox.
type SandboxContainer struct {
	// Name of the container, unique within the sandbox.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Image is the fully qualified container image name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// Command overrides the image's ENTRYPOINT. Each element is one token.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Command []string `json:"command,omitempty"`

	// Args override the image's CMD.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Args []string `json:"args,omitempty"`

	// Env sets environment variables in the container.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Env []EnvVar `json:"env,omitempty"`

	// EnvFrom sets a variable for every key of a ConfigMap or Secret of
	// the Workload's namespace. Keys must be valid variable names; when a
	// key is in several sources the last one wins, and a variable of env
	// wins over them all.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	EnvFrom []EnvFromSource `json:"envFrom,omitempty"`

	// SecurityContext holds the container's security options: privilege
	// escalation, capabilities and the seccomp profile.
	//
	// +optional
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`

	// Resources are the container's requests and limits (cpu, memory).
	//
	// +optional
	Resources *ContainerResourceRequirements `json:"resources,omitempty"`

	// VolumeAttachments mount instance volumes into the container.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=32
	VolumeAttachments []VolumeAttachment `json:"volumeAttachments,omitempty"`

	// Ports the container listens on.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Ports []NamedPort `json:"ports,omitempty"`

	// ReadinessProbe says when the container is ready to serve: until it
	// passes, and whenever it fails, the instance is not Available (and
	// not Ready), so rollouts, waves and failover wait on it. compute's
	// extension of Datum's API.
	//
	// +optional
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe restarts the container when it fails.
	//
	// +optional
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`

	// StartupProbe holds the other probes until it passes once; failing,
	// it restarts the container.
	//
	// +optional
	StartupProbe *Probe `json:"startupProbe,omitempty"`
}

// EnvVar is an environment variable: a literal value or a value read from
// a Secret or ConfigMap key of the project.
type EnvVar struct {
	// Name of the variable.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// Value of the variable. Not allowed together with valueFrom.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Value string `json:"value,omitempty"`

	// ValueFrom reads the value from a Secret or ConfigMap key.
	//
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from: exactly
// one source.
type EnvVarSource struct {
	// SecretKeyRef selects a key of a Secret in the Workload's namespace.
	//
	// +optional
	SecretKeyRef *corev1.SecretKeySelector `json:"secretKeyRef,omitempty"`

	// ConfigMapKeyRef selects a key of a ConfigMap in the Workload's
	// namespace.
	//
	// +optional
	ConfigMapKeyRef *corev1.ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`

	// FieldRef is accepted for compatibility with the Kubernetes shape and
	// refused by admission: a city cell has no pod fields to read.
	//
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`

	// ResourceFieldRef is accepted for compatibility with the Kubernetes
	// shape and refused by admission: use the instance type instead.
	//
	// +optional
	ResourceFieldRef *corev1.ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
}

// EnvFromSource is a ConfigMap or Secret whose keys all become environment
// variables: exactly one of configMapRef or secretRef.
//
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.secretRef)",message="exactly one of configMapRef or secretRef must be set"
type EnvFromSource struct {
	// Prefix is prepended to each key; it must be a C identifier.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Prefix string `json:"prefix,omitempty"`

	// ConfigMapRef is the ConfigMap to read.
	//
	// +optional
	ConfigMapRef *ConfigMapEnvSource `json:"configMapRef,omitempty"`

	// SecretRef is the Secret to read.
	//
	// +optional
	SecretRef *SecretEnvSource `json:"secretRef,omitempty"`
}

// ConfigMapEnvSource names a ConfigMap of the Workload's namespace.
type ConfigMapEnvSource struct {
	// Name of the ConfigMap in the Workload's namespace.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Optional lets the instance run when the ConfigMap is missing.
	//
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// SecretEnvSource names a Secret of the Workload's namespace.
type SecretEnvSource struct {
	// Name of the Secret in the Workload's namespace.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Optional lets the instance run when the Secret is missing.
	//
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// SecurityContext is a container's security options (Datum's shape: a
// subset of the Kubernetes one). What a container leaves unset is the
// runtime's default.
type SecurityContext struct {
	// AllowPrivilegeEscalation says whether a process may gain more
	// privileges than its parent (setuid binaries, file capabilities).
	//
	// +optional
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation,omitempty"`

	// Capabilities are the Linux capabilities granted to or removed from
	// the container.
	//
	// +optional
	Capabilities *Capabilities `json:"capabilities,omitempty"`

	// SeccompProfile is the seccomp profile confining the container's
	// system calls.
	//
	// +optional
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// Capability is a Linux capability without the CAP_ prefix, such as
// NET_BIND_SERVICE.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
type Capability string

// Capabilities grant and remove Linux capabilities.
type Capabilities struct {
	// Add grants capabilities; each must be one the runtime grants (ALL
	// is not allowed, so a container states what it needs).
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Add []Capability `json:"add,omitempty"`

	// Drop removes capabilities, for example [ALL].
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Drop []Capability `json:"drop,omitempty"`
}

// SeccompProfileType is a kind of seccomp profile.
//
// +kubebuilder:validation:Enum=RuntimeDefault;Unconfined
type SeccompProfileType string

// Seccomp profile types: the runtime's own profile, or none. A profile
// loaded from a file of the node is deliberately absent (Datum's choice).
const (
	SeccompProfileTypeRuntimeDefault SeccompProfileType = "RuntimeDefault"
	SeccompProfileTypeUnconfined     SeccompProfileType = "Unconfined"
)

// SeccompProfile selects a seccomp profile.
type SeccompProfile struct {
	// Type of the profile: RuntimeDefault or Unconfined.
	//
	// +required
	Type SeccompProfileType `json:"type"`
}

// ContainerResourceRequirements are a container's requests and limits.
type ContainerResourceRequirements struct {
	// Limits are the most the container may use.
	//
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`

	// Requests are the least the container needs.
	//
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NamedPort is a port a container or virtual machine listens on.
type NamedPort struct {
	// Name of the port, referenced by other platform features.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Port number, 1-65535.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Protocol of the port: TCP (default), UDP or SCTP.
	//
	// +optional
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// VirtualMachineRuntime boots a virtual machine.
type VirtualMachineRuntime struct {
	// VolumeAttachments attach instance volumes to the virtual machine; the
	// first is the boot volume.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	VolumeAttachments []VolumeAttachment `json:"volumeAttachments"`

	// Ports the virtual machine listens on.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Ports []NamedPort `json:"ports,omitempty"`
}

// VolumeAttachment attaches an instance volume by name.
type VolumeAttachment struct {
	// Name of a volume in spec.volumes.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// MountPath is where the volume is mounted in the guest.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	MountPath *string `json:"mountPath,omitempty"`
}

// InstanceNetworkInterface attaches an instance to a network.
//
// +kubebuilder:validation:XValidation:rule="has(self.addresses) == has(oldSelf.addresses) && (!has(self.addresses) || self.addresses == oldSelf.addresses)",message="addresses is immutable and cannot be set, changed, or cleared after creation"
type InstanceNetworkInterface struct {
	// Network to attach to.
	//
	// +required
	Network NetworkReference `json:"network"`

	// Name of the interface, such as eth0: the device name the guest sees
	// and the interface's identity in the list. Immutable.
	//
	// +optional
	// +kubebuilder:default="eth0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="name is immutable and cannot be changed after creation"
	Name string `json:"name,omitempty"`

	// IPFamilies are the address families the interface carries, in
	// priority order; the first holds the primary address. [IPv6, IPv4] is
	// dual-stack. Immutable.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:default={IPv6}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g == f))",message="Each address family may be requested at most once"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ipFamilies is immutable and cannot be changed after creation"
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`

	// Addresses request addresses beyond the interface's own on its
	// network, by class, such as public-ipv4. Immutable.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.class == a.class))",message="Each address class may be requested at most once"
	Addresses []InstanceNetworkInterfaceAddressRequest `json:"addresses,omitempty"`

	// ReclaimPolicy says what becomes of the interface's addresses when the
	// instance slot it serves goes away: Delete returns them, Retain keeps
	// them for a later instance of the slot. Immutable.
	//
	// +optional
	// +kubebuilder:default="Delete"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="reclaimPolicy is immutable and cannot be changed after creation"
	ReclaimPolicy NetworkInterfaceReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// NetworkPolicy is a policy for this interface only: the platform
	// creates a lowest-priority network policy targeting the interface.
	//
	// +optional
	NetworkPolicy *InstanceNetworkInterfaceNetworkPolicy `json:"networkPolicy,omitempty"`
}

// IPFamily is an address family.
//
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

// Address families.
const (
	IPv4 IPFamily = "IPv4"
	IPv6 IPFamily = "IPv6"
)

// NetworkInterfaceReclaimPolicy is what becomes of an interface's addresses
// when its instance slot goes away.
//
// +kubebuilder:validation:Enum=Delete;Retain
type NetworkInterfaceReclaimPolicy string

// Reclaim policies.
const (
	ReclaimDelete NetworkInterfaceReclaimPolicy = "Delete"
	ReclaimRetain NetworkInterfaceReclaimPolicy = "Retain"
)

// Defaults of a network interface, as Datum's schema sets them: the
// schema writes them on every interface that leaves them out, stored ones
// included, so the template hash (internal/names) ignores them.
const (
	DefaultInterfaceName = "eth0"
	DefaultReclaimPolicy = ReclaimDelete
)

// DefaultIPFamily is the address family of an interface that names none
// (ipFamilies [IPv6]).
const DefaultIPFamily = IPv6

// InstanceNetworkInterfaceAddressRequest asks for one address beyond the
// interface's own.
type InstanceNetworkInterfaceAddressRequest struct {
	// Class is the kind of address to allocate, such as public-ipv4; the
	// platform chooses the pool. A class never names an address.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Class string `json:"class"`
}

// NetworkReference names a network (networking.datumapis.com).
type NetworkReference struct {
	// Namespace of the network; defaults to the instance's namespace.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Name of the network.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// InstanceNetworkInterfaceNetworkPolicy is an interface's network policy.
type InstanceNetworkInterfaceNetworkPolicy struct {
	// Ingress rules: traffic matching any rule is allowed in.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Ingress []NetworkPolicyIngressRule `json:"ingress,omitempty"`
}

// NetworkPolicyIngressRule allows traffic that matches one of its ports and
// one of its sources.
type NetworkPolicyIngressRule struct {
	// Ports the rule allows; empty means every port.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Ports []NetworkPolicyPort `json:"ports,omitempty"`

	// From are the sources the rule allows; empty means every source.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	From []NetworkPolicyPeer `json:"from,omitempty"`
}

// NetworkPolicyPort is a port or port range to allow.
type NetworkPolicyPort struct {
	// Protocol: TCP (default), UDP or SCTP.
	//
	// +optional
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol *corev1.Protocol `json:"protocol,omitempty"`

	// Port is a port number or the name of a port of the instance; empty
	// means every port.
	//
	// +optional
	Port *intstr.IntOrString `json:"port,omitempty"`

	// EndPort makes the rule allow the range port..endPort inclusive; port
	// must then be a number no greater than endPort.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	EndPort *int32 `json:"endPort,omitempty"`
}

// NetworkPolicyPeer is a source of traffic.
type NetworkPolicyPeer struct {
	// IPBlock is a CIDR the traffic comes from.
	//
	// +optional
	IPBlock *IPBlock `json:"ipBlock,omitempty"`
}

// IPBlock is a CIDR, such as 192.168.1.0/24 or 2001:db8::/64, minus the
// CIDRs in except.
type IPBlock struct {
	// CIDR of the block.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	CIDR string `json:"cidr"`

	// Except are CIDRs inside cidr that are not included.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	Except []string `json:"except,omitempty"`
}

// LocalSecretReference names a secret in the same namespace.
type LocalSecretReference struct {
	// Name of the secret.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// LocationReference names a Location (networking.datumapis.com).
type LocationReference struct {
	// Name of the Location.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the Location.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
}

// NameOrEmpty is the name of r, empty when r is nil.
func (r *LocationReference) NameOrEmpty() string {
	if r == nil {
		return ""
	}
	return r.Name
}

// InstanceVolume is a volume an instance can attach.
//
// +kubebuilder:validation:XValidation:rule="(has(self.disk) ? 1 : 0) + (has(self.configMap) ? 1 : 0) + (has(self.secret) ? 1 : 0) == 1",message="exactly one of disk, configMap or secret must be set"
type InstanceVolume struct {
	// Name of the volume, referenced by volume attachments.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Disk is a persistent disk created for the instance from a template.
	//
	// +optional
	Disk *DiskTemplateVolumeSource `json:"disk,omitempty"`

	// ConfigMap populates the volume from a ConfigMap in the Workload's
	// namespace.
	//
	// +optional
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`

	// Secret populates the volume from a Secret in the Workload's namespace.
	//
	// +optional
	Secret *SecretVolumeSource `json:"secret,omitempty"`
}

// DiskTemplateVolumeSource is a disk created for each instance.
type DiskTemplateVolumeSource struct {
	// DeviceName is the name the guest sees under
	// /dev/disk/by-id/datumcloud-*; the platform chooses one when empty.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	DeviceName *string `json:"deviceName,omitempty"`

	// Template the disk is created from.
	//
	// +optional
	Template *DiskTemplateVolumeSourceTemplate `json:"template,omitempty"`

	// Type is the first shape of this API (disk{type, size, image}).
	//
	// Deprecated: use template.spec.type; admission moves it there.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type,omitempty"`

	// Size is the first shape of this API. Deprecated: use
	// template.spec.resources.requests.storage; admission moves it there.
	//
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// Image is the first shape of this API. Deprecated: use
	// template.spec.populator.image.name; admission moves it there.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Image string `json:"image,omitempty"`
}

// DiskTemplateVolumeSourceTemplate is the template of a disk.
type DiskTemplateVolumeSourceTemplate struct {
	// Metadata of the disks created from the template.
	//
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// Spec of the disks created from the template.
	//
	// +required
	Spec DiskSpec `json:"spec"`
}

// DiskSpec is the desired configuration of a disk.
type DiskSpec struct {
	// Type of the disk, such as `pd-standard` (the default).
	//
	// +optional
	// +kubebuilder:default=pd-standard
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type,omitempty"`

	// Resources of the disk: requests.storage is its size.
	//
	// +optional
	Resources *DiskResourceRequirements `json:"resources,omitempty"`

	// Populator fills the disk when it is created: exactly one of image or
	// filesystem.
	//
	// +optional
	Populator *DiskPopulator `json:"populator,omitempty"`
}

// DiskResourceRequirements are a disk's resources.
type DiskResourceRequirements struct {
	// Requests: storage is the size of the disk.
	//
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// DiskPopulator fills a new disk.
type DiskPopulator struct {
	// Image copies an image onto the disk; a virtual machine boots from it.
	//
	// +optional
	Image *ImageDiskPopulator `json:"image,omitempty"`

	// Filesystem formats the disk.
	//
	// +optional
	Filesystem *FilesystemDiskPopulator `json:"filesystem,omitempty"`
}

// ImageDiskPopulator names an image.
type ImageDiskPopulator struct {
	// Name of the image, such as `datumcloud/ubuntu-2204-lts`.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// FilesystemDiskPopulator formats a disk.
type FilesystemDiskPopulator struct {
	// Type of the filesystem.
	//
	// +required
	// +kubebuilder:validation:Enum=ext4
	Type string `json:"type"`
}

// ConfigMapVolumeSource populates a volume from a ConfigMap (the Kubernetes
// shape).
type ConfigMapVolumeSource struct {
	// Name of the ConfigMap.
	//
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Items project chosen keys to paths; without them every key becomes a
	// file named after it.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Items []corev1.KeyToPath `json:"items,omitempty"`

	// DefaultMode is the permission bits of the files, 0 to 0777 (decimal
	// 0 to 511). Defaults to 0644.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`

	// Optional lets the instance run when the ConfigMap or a key is missing.
	//
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// SecretVolumeSource populates a volume from a Secret (the Kubernetes
// shape).
type SecretVolumeSource struct {
	// SecretName is the name of the Secret.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`

	// Items project chosen keys to paths; without them every key becomes a
	// file named after it.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Items []corev1.KeyToPath `json:"items,omitempty"`

	// DefaultMode is the permission bits of the files, 0 to 0777 (decimal
	// 0 to 511). Defaults to 0644.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`

	// Optional lets the instance run when the Secret or a key is missing.
	//
	// +optional
	Optional *bool `json:"optional,omitempty"`

	// Name is the first shape of this API (secret{name}). Deprecated: use
	// secretName; admission moves it there.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// InstanceStatus is the observed state of an Instance.
type InstanceStatus struct {
	// Conditions: Ready (computed by compute), Programmed and Available (set
	// by the runtime provider) and QuotaGranted.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// NetworkInterfaces report the addresses assigned to each interface.
	//
	// +optional
	NetworkInterfaces []InstanceNetworkInterfaceStatus `json:"networkInterfaces,omitempty"`

	// Controller reports what the runtime provider has applied.
	//
	// +optional
	Controller *InstanceControllerStatus `json:"controller,omitempty"`

	// Suspended is true while the Instance is suspended and its runtime
	// provider has confirmed it stopped (nothing of it runs; the Instance
	// and its quota claim stay). See SuspendedAnnotation.
	//
	// +optional
	Suspended bool `json:"suspended,omitempty"`
}

// InstanceNetworkInterfaceStatus reports one interface's addresses.
type InstanceNetworkInterfaceStatus struct {
	// Assignments are the addresses given to the interface.
	//
	// +optional
	Assignments InstanceNetworkInterfaceAssignments `json:"assignments,omitempty"`
}

// InstanceNetworkInterfaceAssignments are the addresses of an interface.
type InstanceNetworkInterfaceAssignments struct {
	// NetworkIP is the primary address on the attached network.
	//
	// +optional
	NetworkIP *string `json:"networkIP,omitempty"`

	// ExternalIP is the public address NATed one to one to NetworkIP.
	//
	// +optional
	ExternalIP *string `json:"externalIP,omitempty"`
}

// InstanceControllerStatus reports what the runtime provider has applied.
type InstanceControllerStatus struct {
	// ObservedTemplateHash is the template hash the running instance was
	// built from.
	//
	// +optional
	ObservedTemplateHash string `json:"observedTemplateHash,omitempty"`
}

// Instance is one replica of a WorkloadDeployment: created in a cell, written
// back to the federation plane, and projected read-only into the project.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=compute
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="City",type=string,JSONPath=`.metadata.labels.compute\.datumapis\.com/city-code`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.metadata.labels.compute\.datumapis\.com/workload-name`,priority=1
// +kubebuilder:printcolumn:name="Quota",type=string,JSONPath=`.status.conditions[?(@.type=="QuotaGranted")].reason`,priority=1
// +kubebuilder:printcolumn:name="Network IP",type=string,JSONPath=`.status.networkInterfaces[0].assignments.networkIP`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Instance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the instance.
	//
	// +required
	Spec InstanceSpec `json:"spec"`

	// Status is the observed state of the instance.
	//
	// +optional
	Status InstanceStatus `json:"status,omitempty"`
}

// InstanceList is a list of Instances.
//
// +kubebuilder:object:root=true
type InstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Instances.
	Items []Instance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Instance{}, &InstanceList{})
}
