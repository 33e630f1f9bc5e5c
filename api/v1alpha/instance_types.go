package v1alpha

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// +optional
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
}

// EnvVar is an environment variable with a literal value.
type EnvVar struct {
	// Name of the variable.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// Value of the variable.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Value string `json:"value,omitempty"`
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
type InstanceNetworkInterface struct {
	// Network to attach to.
	//
	// +required
	Network NetworkReference `json:"network"`
}

// NetworkReference names a network in the instance's namespace.
type NetworkReference struct {
	// Name of the network.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
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

	// Disk is a persistent disk created for the instance.
	//
	// +optional
	Disk *DiskVolumeSource `json:"disk,omitempty"`

	// ConfigMap populates the volume from a ConfigMap.
	//
	// +optional
	ConfigMap *ObjectVolumeSource `json:"configMap,omitempty"`

	// Secret populates the volume from a Secret.
	//
	// +optional
	Secret *ObjectVolumeSource `json:"secret,omitempty"`
}

// DiskVolumeSource describes a persistent disk.
type DiskVolumeSource struct {
	// Type of the disk, such as `pd-standard`.
	//
	// +optional
	// +kubebuilder:default=pd-standard
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type,omitempty"`

	// Size of the disk.
	//
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// Image populates the disk from an image.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Image string `json:"image,omitempty"`
}

// ObjectVolumeSource names a ConfigMap or Secret in the same namespace.
type ObjectVolumeSource struct {
	// Name of the object.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
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
