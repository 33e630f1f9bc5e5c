// Package kubernetes is the Kubernetes runtime provider: it runs each
// Instance of a cell as a Pod in the cell's own Kubernetes API (the API
// compute-manager's cell role runs against), so a cell with a scheduler,
// nodes and a CNI runs containers without any other runtime. It plays the
// provider's part of the Instance contract, as the simulated provider
// (internal/standin/simprovider) does:
//
//   - it acts only on Instances without scheduling gates
//     (spec.controller.schedulingGates empty);
//   - it stops a suspended Instance (annotation
//     compute.datumapis.com/suspended: "true") and keeps it: the Pod is
//     deleted, Programmed and Available are False with reason Terminating
//     while it goes and Suspended once it is gone; the finalizer stays,
//     and the Pod is created again when the annotation goes;
//   - it holds its own finalizer (Finalizer) on every Instance it runs,
//     added before the Pod is created. Deleting the Instance deletes the
//     Pod; the finalizer goes once the Pod is gone (a Pod on a node is gone
//     when its kubelet has stopped it);
//   - it writes Programmed, Available, status.controller.observedTemplateHash
//     (the template hash of the Pod that runs, from its
//     TemplateHashAnnotation) and one address per network interface with
//     server-side apply under FieldOwner, only when they change, so
//     compute's own conditions (Ready, QuotaGranted) are never touched. A
//     Pod has one network interface, the cluster network's: interface 0
//     gets the Pod IP as assignments.networkIP, every other interface an
//     entry without addresses. With the networking integration recording
//     addresses (AddressesFromNetwork) it writes none.
//
// # The Pod
//
// One Pod per Instance, in the Instance's namespace and with its name,
// controlled by it (an owner reference with its UID), labelled with
// InstanceLabel (the manager caches only Pods with that label:
// CacheByObject) and the Instance's labels, and annotated with the template
// hash. It mounts no service account token, gets no service links and
// restarts its containers always. Each sandbox container becomes a
// container with its image, command, args, environment (values from
// ConfigMap and Secret keys included, after COMPUTE_INSTANCE_NAME and
// COMPUTE_CITY_CODE, which tell it where it runs), whole ConfigMaps and
// Secrets read as environment (envFrom, with its prefix), its security
// context (allowPrivilegeEscalation, capabilities without a CAP_ prefix,
// the seccomp profile), ports and ConfigMap and Secret volume mounts. A
// container that states no security context gets none: the Pod runs with
// the container runtime's defaults, as before the field existed (the
// provider sets no pod-level security context either). runtime.class is
// not used: compute has no RuntimeClass catalog, and a tenant's value
// never selects a runtime handler of the cell (Datum keeps runtime
// configuration platform-owned), so every Pod runs with the cell's own
// runtime. The interface fields (name, ipFamilies, addresses,
// reclaimPolicy) do not change the Pod: a Pod has the cluster network's
// one interface, whatever the Instance asks for. A container's limits are its size: its own limit, else its
// own request, else an even share of what the instance's size (its runtime
// requests, else its instance type: internal/quota/sizing) leaves. Its
// requests are the same (a Guaranteed Pod), or the size divided by the
// allocation ratio when one above 1 overcommits the nodes
// (Reconciler.AllocationRatio, compute-manager
// --runtime-allocation-ratio).
//
// # The NetworkPolicy
//
// One NetworkPolicy per Instance (networkPolicyFor), in its namespace and
// with its name, controlled by it and labelled with InstanceLabel (cached
// like the Pods), selecting the Instance's Pod by InstanceLabel alone —
// never by a label the template chose — and restricting Ingress only: the
// rules of every interface's networkPolicy (a Pod has one network, so they
// add up; ports and ipBlock{cidr, except} as written, TCP when no protocol
// is named; a policy without rules denies every source), or, for an
// Instance that declares none, ingress from the Pods of its own namespace.
// It is written before the Pod is created, updated when it differs,
// deleted in teardown once the Pod is gone (the owner reference lets the
// garbage collector take one left behind). Whether it is enforced is the
// cell's CNI's business, which the provider cannot see:
// Reconciler.NetworkPolicyEnforcement (compute-manager
// --network-policy-enforcement) says; where it is none, an Instance that
// declares a policy is Programmed False with reason
// NetworkPolicyNotEnforced once its Pod is placed, and runs.
//
// ConfigMaps and Secrets (volumes, env keys, envFrom, image pull secrets)
// are read from the cell objects that carry the
// project's, named by referenceddata.CompanionName: `configmap.<name>` and
// `secret.<name>`, in the Instance's namespace (image pull secrets too).
// Until a referenced one that is not optional exists, no Pod is created:
// Programmed and Available are False with reason ConfigurationError and a
// message naming the object, and the Instance is looked at again every
// RecheckAfter (10 s by default), because the provider does not watch
// ConfigMaps and Secrets: a watch of every Secret of the cell is more than
// it needs, so it reads only the metadata of the ones it names, uncached.
//
// A Pod the cell's API server forbids (a ResourceQuota of the namespace,
// an admission policy) leaves the Instance Provisioning with the server's
// message, tried again every RecheckAfter; one it finds invalid is a
// ConfigurationError.
//
// A Pod of the Instance's name that belongs to an earlier Instance of that
// name (recreated for a restart or a template change), whose template hash
// is not the Instance's, or that has stopped for good (Failed or
// Succeeded: evicted, say) is deleted, and a new one is created once it is
// gone. A Pod of that name the provider did not create (without
// InstanceLabel) is never touched: the Instance reports ConfigurationError
// until it is deleted.
//
// # Status
//
// decide and podConditions compute the conditions from the Instance and
// its Pod alone (the provider reads no Nodes), with compute's reasons
// (api/v1alpha/conditions.go) where one fits:
//
//   - no Pod yet, or not scheduled yet: Provisioning;
//   - the scheduler cannot place the Pod (PodScheduled False,
//     Unschedulable): ReasonUnschedulable, with the scheduler's message
//     (which resource is short on how many nodes);
//   - a container waiting with ErrImagePull, ImagePullBackOff,
//     InvalidImageName and the like: ImageUnavailable, naming the image
//     and the runtime's message;
//   - a container waiting with CreateContainerConfigError and the like (a
//     missing ConfigMap key, an entrypoint not found): ConfigurationError;
//   - a container in CrashLoopBackOff, terminated, or restarted and not
//     ready after a termination: InstanceCrashing, with the exit code, the
//     reason and the restart count;
//   - Running and Ready: Programmed and Available True (Available);
//     Running but not Ready: Available False, NotAvailable;
//   - the node stopped reporting (phase Unknown, reason NodeLost, or Ready
//     turned False by the node lifecycle controller rather than the
//     kubelet): Available False, ReasonNodeUnreachable. The provider never
//     deletes the Pod or the Instance for that; Kubernetes may evict the
//     Pod after its toleration of the unreachable taint, and the provider
//     then creates a new one.
//
// A virtual machine is refused with ConfigurationError ("the kubernetes
// runtime provider runs containers only"), and so is anything else the
// provider cannot express as a Pod (a disk attached to a container, an
// environment variable read from a pod field): no Pod is created.
package kubernetes
