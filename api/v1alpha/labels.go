package v1alpha

// Labels stamped on every Instance at create time and back-filled on every
// reconcile. They are the only way to find an Instance's relations: never
// parse names.
const (
	// WorkloadUIDLabel is the UID of the Workload the object belongs to.
	WorkloadUIDLabel = "compute.datumapis.com/workload-uid"
	// WorkloadNameLabel is the name of the Workload the object belongs to.
	WorkloadNameLabel = "compute.datumapis.com/workload-name"
	// WorkloadDeploymentUIDLabel is the UID of the WorkloadDeployment that
	// created an Instance (in the plane where it was created).
	WorkloadDeploymentUIDLabel = "compute.datumapis.com/workload-deployment-uid"
	// WorkloadDeploymentNameLabel is the name of the WorkloadDeployment that
	// owns an Instance; the same name in every plane.
	WorkloadDeploymentNameLabel = "compute.datumapis.com/workload-deployment-name"
	// InstanceIndexLabel is the ordinal of an Instance: the only source of its
	// slot.
	InstanceIndexLabel = "compute.datumapis.com/instance-index"
	// CityCodeLabel is the city an object runs in.
	CityCodeLabel = "compute.datumapis.com/city-code"
	// PlacementNameLabel is the Workload placement an object belongs to.
	PlacementNameLabel = "compute.datumapis.com/placement-name"
)

// Federation labels and annotations.
const (
	// UpstreamClusterNameLabel names the project cluster an object in the
	// federation plane or a cell came from: "cluster-<project cluster name>"
	// with "/" replaced by "_".
	UpstreamClusterNameLabel = "meta.datumapis.com/upstream-cluster-name"
	// UpstreamNamespaceLabel names the project namespace an object in the
	// federation plane or a cell came from.
	UpstreamNamespaceLabel = "meta.datumapis.com/upstream-namespace"
	// CityCodeTopologyLabel routes WorkloadDeployments in the federation plane
	// and labels Karmada Clusters with the city they serve.
	CityCodeTopologyLabel = "topology.datum.net/city-code"
	// LocationTopologyLabel names, on a WorkloadDeployment and its copies,
	// the Location it runs in (Datum's label for a Location's cluster).
	// Routing stays by CityCodeTopologyLabel: a cell serves every Location
	// of its city.
	LocationTopologyLabel = "topology.datum.net/location"
	// FederationNamespaceAnnotation records, on the project
	// WorkloadDeployment, the federation-plane namespace holding its copy.
	FederationNamespaceAnnotation = "compute.datumapis.com/federation-namespace"
	// ProjectionLabel marks an Instance in a project plane as a read-only
	// projection of an Instance running in a cell.
	ProjectionLabel = "compute.datumapis.com/projection"
	// EventSummaryOfLabel, on a project event regarding a Workload, marks
	// it as the Workload's copy of a Warning event of one of its Instances
	// (the value is the Instance's name).
	EventSummaryOfLabel = "compute.datumapis.com/summary-of"
	// ManagedByLabel, set to ManagedByCompute, marks the federation-plane
	// objects compute creates and deletes on its own (PropagationPolicies),
	// so it never touches policies somebody else wrote.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByCompute is the value of ManagedByLabel on compute's objects.
	ManagedByCompute = "compute"
	// SourceUIDAnnotation, on a hub write-back and on a projection, is the
	// UID of the cell Instance they mirror. When the cell recreates the
	// Instance (restart, template change, stray removal) the UID changes,
	// and the write-back and then the projection are replaced rather than
	// updated, so the project shows a new Instance with a fresh age.
	SourceUIDAnnotation = "compute.datumapis.com/source-uid"
	// SourceCreatedAnnotation is the creation time (RFC 3339) of that cell
	// Instance.
	SourceCreatedAnnotation = "compute.datumapis.com/source-created"
)

// Quota claim labels.
const (
	// InstanceNamespaceLabel is the cell namespace of the Instance a
	// ResourceClaim was made for.
	InstanceNamespaceLabel = "compute.datumapis.com/instance-namespace"
	// SourceClusterLabel is the cell that made a ResourceClaim.
	SourceClusterLabel = "compute.datumapis.com/source-cluster"
)

// Template annotations.
const (
	// RestartedAtAnnotation on an instance template restarts every Instance:
	// a new value changes the template hash, which rolls the Instances by
	// delete and recreate.
	RestartedAtAnnotation = "compute.datumapis.com/restartedAt"

	// CityRestartedAtAnnotationPrefix, followed by a city code, is a
	// Workload annotation (e.g. compute.datumapis.com/restartedAt.DFW) that
	// restarts one city: its RFC 3339 value becomes that city's template
	// restartedAt whenever it is later than the Workload's own, so only that
	// city rolls and the restart survives every later reconcile.
	CityRestartedAtAnnotationPrefix = RestartedAtAnnotation + "."
)

// Revision history annotations.
const (
	// TemplateChangedByAnnotation on a Workload names the user whose request
	// last changed its template; admission sets it. The revision recorded
	// for that template copies it, so rollout history shows who made each
	// change whichever client made it.
	TemplateChangedByAnnotation = "compute.datumapis.com/template-changed-by"
)

// Finalizers.
const (
	// WorkloadFinalizer lets the WorkloadReconciler remove WorkloadDeployments.
	WorkloadFinalizer = "compute.datumapis.com/workload-controller"
	// FederationFinalizer lets the federator remove the federation-plane copy
	// of a project WorkloadDeployment.
	FederationFinalizer = "compute.datumapis.com/federation"
	// InstanceFinalizer lets the cell release an Instance's quota claim and
	// write-back before it goes.
	InstanceFinalizer = "compute.datumapis.com/instance-controller"
)

// Scheduling gate names.
const (
	// QuotaSchedulingGate holds an Instance until its quota is granted.
	QuotaSchedulingGate = "Quota"
	// NetworkSchedulingGate holds an Instance until its network is ready
	// (only with the NetworkingIntegration feature gate).
	NetworkSchedulingGate = "Network"
)

// Quota resource types compute claims.
const (
	// ResourceTypeInstances counts Instances.
	ResourceTypeInstances = "compute.datumapis.com/instances"
	// ResourceTypeVCPUs counts vCPU in millicores.
	ResourceTypeVCPUs = "compute.datumapis.com/vcpus"
	// ResourceTypeMemory counts memory in MiB.
	ResourceTypeMemory = "compute.datumapis.com/memory"
)

// Rollout annotations. Those on a WorkloadDeployment are written by the
// WorkloadReconciler and are the memory of a rollout across cities: the
// rollout is rebuilt from them (and the deployments' status) after a
// restart.
const (
	// RevisionHashAnnotation on a WorkloadDeployment is the template hash of
	// the Workload revision the city runs (its own template may differ by a
	// per-city restart).
	RevisionHashAnnotation = "compute.datumapis.com/revision-hash"
	// PreviousRevisionHashAnnotation on a WorkloadDeployment is the template
	// hash of the revision the city ran before; a rollback returns to it.
	PreviousRevisionHashAnnotation = "compute.datumapis.com/previous-revision-hash"
	// RevisionAppliedAtAnnotation on a WorkloadDeployment is the RFC 3339
	// time the city got its revision: the start of its progress deadline.
	RevisionAppliedAtAnnotation = "compute.datumapis.com/revision-applied-at"
	// RolledBackFromAnnotation on a WorkloadDeployment is
	// "<template hash>:<Reason>": the revision the city was rolled back
	// from when the rollout halted, and why. While the Workload's template
	// is still that revision, the rollout stays halted.
	RolledBackFromAnnotation = "compute.datumapis.com/rolled-back-from"
	// RolloutApprovedAnnotation on a Workload is "<template hash>:<wave>":
	// waves up to that number (from 1) of the revision with that hash may
	// start (spec.rollout.approval Manual). `rollout approve` writes it.
	RolloutApprovedAnnotation = "compute.datumapis.com/rollout-approved"
	// RolloutAtOnceAnnotation on a Workload is a template hash: the revision
	// with that hash goes to every city at once, whatever the strategy.
	// `rollout undo --at-once` writes it.
	RolloutAtOnceAnnotation = "compute.datumapis.com/rollout-at-once"
)

// RevisionSoakedAnnotation on a WorkloadDeployment is the template hash of
// the revision the city has soaked at: from then on a failure there is an
// operational problem, not one of the rollout, and neither halts it nor
// holds its later waves back.
const RevisionSoakedAnnotation = "compute.datumapis.com/revision-soaked"

// Failover bookkeeping on a fallback's WorkloadDeployment (written by the
// Workload controller; see PlacementFailover).
const (
	// FailoverForLabel is set on a fallback's WorkloadDeployment: the name
	// of the WorkloadDeployment whose replicas it runs.
	FailoverForLabel = "compute.datumapis.com/failover-for"
	// FailoverReturningSinceAnnotation is when (RFC 3339) the unreachable
	// Location was first seen reachable and Available again; empty while
	// it is not. The fallback drains returnAfterSeconds later.
	FailoverReturningSinceAnnotation = "compute.datumapis.com/failover-returning-since"
	// FailoverMovedFromAnnotation is set on a fallback that took the
	// replicas from an earlier fallback that refused them: which, and why.
	FailoverMovedFromAnnotation = "compute.datumapis.com/failover-moved-from"
)
