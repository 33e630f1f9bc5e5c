package v1alpha

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// InstanceTemplateSpec is the template Instances are created from.
type InstanceTemplateSpec struct {
	// Metadata holds labels and annotations copied onto every Instance.
	//
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`

	// Spec is the InstanceSpec of every Instance.
	//
	// +required
	Spec InstanceSpec `json:"spec"`
}

// TemplateMetadata is the metadata an instance template may set. It has the
// fields Datum's embedded ObjectMeta carries; only labels and annotations
// reach the Instances (their names are derived from the deployment).
type TemplateMetadata struct {
	// Name is accepted for compatibility and not used: Instances are named
	// after their WorkloadDeployment and ordinal.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// Namespace is accepted for compatibility; when set it must be the
	// Workload's namespace.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// Finalizers are accepted for compatibility and refused by admission:
	// compute owns the finalizers of Instances.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Finalizers []string `json:"finalizers,omitempty"`

	// Labels copied onto every Instance.
	//
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations copied onto every Instance. A change to
	// compute.datumapis.com/restartedAt restarts every Instance.
	//
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WorkloadSpec is what a developer asks for: one instance template and where
// to run it.
type WorkloadSpec struct {
	// Template every Instance is created from.
	//
	// +required
	Template InstanceTemplateSpec `json:"template"`

	// Placements say where instances run and how many: each placement names
	// cities and the replicas to run in each of them.
	//
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Placements []WorkloadPlacement `json:"placements"`

	// RevisionHistoryLimit is how many old template revisions are kept for
	// rollback. Defaults to 10.
	//
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Rollout says how a template change travels between cities: all at
	// once (the default), in explicit waves, or canary first. See
	// docs/rollouts.md.
	//
	// +optional
	Rollout *WorkloadRollout `json:"rollout,omitempty"`
}

// WorkloadPlacement runs instances in a set of Locations: the ones it
// names (locations) or the ones whose topology it selects
// (locationSelector). Exactly one of the two is set; cityCodes, the
// spelling from before Locations, is rewritten into a locationSelector.
//
// +kubebuilder:validation:XValidation:rule="(has(self.locations) && size(self.locations) > 0) || has(self.locationSelector) || (has(self.cityCodes) && size(self.cityCodes) > 0)",message="exactly one of locations or locationSelector is required"
// +kubebuilder:validation:XValidation:rule="!(has(self.locations) && size(self.locations) > 0 && has(self.locationSelector))",message="exactly one of locations or locationSelector may be set"
type WorkloadPlacement struct {
	// Name of the placement, unique within the Workload.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Locations are the Locations to run in, by name: each one bound to the
	// project gets a WorkloadDeployment with scaleSettings.minReplicas
	// instances. Exactly one of locations and locationSelector is set.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Locations []PlacementLocation `json:"locations,omitempty"`

	// LocationSelector selects Locations by their topology labels (such as
	// topology.datum.net/city-code or topology.datum.net/region) among the
	// Locations bound to the project: every one that matches gets a
	// WorkloadDeployment, re-evaluated as Locations are bound, unbound,
	// added or change readiness. An empty selector is refused rather than
	// taken to match everything. Exactly one of locations and
	// locationSelector is set.
	//
	// +optional
	LocationSelector *metav1.LabelSelector `json:"locationSelector,omitempty"`

	// CityCodes are the cities to run in, as airport-style codes (DFW, LHR):
	// the deprecated spelling from before Locations, kept so manifests and
	// Workloads written with it keep working. Admission and the Workload
	// controller rewrite it into a locationSelector on
	// topology.datum.net/city-code (every Location in those cities) and
	// clear it.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[A-Z]{3}$`
	CityCodes []string `json:"cityCodes,omitempty"`

	// ScaleSettings say how many instances run in each city.
	//
	// +required
	ScaleSettings HorizontalScaleSettings `json:"scaleSettings"`

	// RolloutStrategy says how fast instances are replaced on a template
	// change.
	//
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// Failover lets the replicas of a Location of this placement whose
	// cell has been unreachable for tolerationSeconds run in a fallback
	// Location until the cell is back. Off when unset.
	//
	// +optional
	Failover *PlacementFailover `json:"failover,omitempty"`
}

// PlacementFailover says where and when the replicas of an unreachable
// Location of a placement fail over. The unreachable Location's own
// objects are never deleted or scaled: its Instances may still serve users
// who can reach them. The fallback's replicas drain once the Location is
// reachable again and Available at its current template for
// returnAfterSeconds.
type PlacementFailover struct {
	// Fallbacks are the Locations, bound to the project, that may take the
	// replicas of an unreachable Location, tried in order: the first whose
	// cell is reachable and that is ready gets them; one whose replicas are
	// refused (quota, capacity, or its own cell unreachable) hands them to
	// the next.
	//
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Fallbacks []PlacementLocation `json:"fallbacks"`

	// TolerationSeconds is how long a Location's cell must be unreachable,
	// without a break, before its replicas fail over. A cell heard from
	// again restarts the count, so a flapping city does not fail over.
	// Defaults to 300.
	//
	// +optional
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`

	// ReturnAfterSeconds is how long a Location that failed over must be
	// reachable and Available at its current template before the
	// fallback's replicas drain. Defaults to 60.
	//
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=86400
	ReturnAfterSeconds *int32 `json:"returnAfterSeconds,omitempty"`

	// MaxFailedOverLocations is how many Locations of the Workload (across
	// its placements) may be failed over at once before this placement
	// starts another failover. Defaults to 1.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxFailedOverLocations *int32 `json:"maxFailedOverLocations,omitempty"`

	// AllowPlacementLocations lets a fallback be one of the Locations the
	// placement itself runs in: its failed-over replicas then run beside
	// its own. Refused unless set, so a fallback is spare capacity by
	// default.
	//
	// +optional
	AllowPlacementLocations bool `json:"allowPlacementLocations,omitempty"`
}

// Failover defaults.
const (
	DefaultFailoverTolerationSeconds      int32 = 300
	DefaultFailoverReturnAfterSeconds     int32 = 60
	DefaultFailoverMaxFailedOverLocations int32 = 1
)

// PlacementLocation names a Location a placement runs in.
type PlacementLocation struct {
	// Name of a Location bound to the project.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// InstanceManagementPolicyType says how instances are ordered.
//
// +kubebuilder:validation:Enum=OrderedReady;Parallel
type InstanceManagementPolicyType string

const (
	// OrderedReadyInstanceManagementPolicy creates instances in ascending
	// ordinal, each waiting for the previous to be ready, and removes and
	// updates them in descending ordinal.
	OrderedReadyInstanceManagementPolicy InstanceManagementPolicyType = "OrderedReady"
	// ParallelInstanceManagementPolicy creates and removes instances without
	// ordering.
	ParallelInstanceManagementPolicy InstanceManagementPolicyType = "Parallel"
)

// HorizontalScaleSettings are replica bounds and ordering.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.maxReplicas >= self.minReplicas",message="maxReplicas must be greater than or equal to minReplicas",fieldPath=".maxReplicas"
type HorizontalScaleSettings struct {
	// MinReplicas is the number of instances per city.
	//
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MinReplicas int32 `json:"minReplicas"`

	// MaxReplicas bounds scaling; at least minReplicas.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Metrics that drive autoscaling between minReplicas and maxReplicas:
	// with maxReplicas set, each city's cell runs an autoscaler on them
	// (see docs/api.md, Autoscaling).
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Metrics []MetricSpec `json:"metrics,omitempty"`

	// InstanceManagementPolicy is OrderedReady (default) or Parallel.
	//
	// +optional
	// +kubebuilder:default=OrderedReady
	InstanceManagementPolicy InstanceManagementPolicyType `json:"instanceManagementPolicy,omitempty"`
}

// MetricSpec is one metric to scale on.
type MetricSpec struct {
	// Resource is a resource metric of the instances (cpu, memory).
	//
	// +optional
	Resource *ResourceMetricSource `json:"resource,omitempty"`
}

// ResourceMetricSource scales on a resource of the instances.
type ResourceMetricSource struct {
	// Name of the resource: cpu or memory.
	//
	// +required
	Name corev1.ResourceName `json:"name"`

	// Target value of the metric.
	//
	// +required
	Target MetricTarget `json:"target"`
}

// MetricTarget is the target of a metric: exactly one of value,
// averageValue or averageUtilization.
type MetricTarget struct {
	// Value is the target value of the metric.
	//
	// +optional
	Value *resource.Quantity `json:"value,omitempty"`

	// AverageValue is the target of the metric averaged over instances.
	//
	// +optional
	AverageValue *resource.Quantity `json:"averageValue,omitempty"`

	// AverageUtilization is the target average, as a percentage of the
	// instances' requests.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	AverageUtilization *int32 `json:"averageUtilization,omitempty"`
}

// RolloutStrategy bounds a template rollout.
type RolloutStrategy struct {
	// MaxUnavailable is how many instances may be down for replacement at
	// once. Defaults to 1.
	//
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// WorkloadReference names a Workload.
type WorkloadReference struct {
	// Name of the Workload.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// UID of the Workload.
	//
	// +required
	UID types.UID `json:"uid"`
}

// ReplicaCounts are the counts every status level reports.
type ReplicaCounts struct {
	// Replicas is the number of instances that exist.
	//
	// +optional
	Replicas int32 `json:"replicas"`
	// CurrentReplicas is the number of instances that are up to date and
	// programmed.
	//
	// +optional
	CurrentReplicas int32 `json:"currentReplicas"`
	// UpdatedReplicas is the number of instances running the latest template.
	//
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReadyReplicas is the number of ready instances.
	//
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// DesiredReplicas is the number of instances wanted.
	//
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas"`
}

// WorkloadStatus is the aggregated state of a Workload's deployments.
type WorkloadStatus struct {
	// ObservedGeneration is the Workload generation every WorkloadDeployment
	// has caught up with.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available, Progressing, FailedOver, and AutoscalingReady and
	// AutoscalingLimited while a placement autoscales.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Deployments is the number of WorkloadDeployments.
	//
	// +optional
	Deployments int32 `json:"deployments"`

	ReplicaCounts `json:",inline"`

	// Placements report each placement, sorted by name.
	//
	// +optional
	Placements []WorkloadPlacementStatus `json:"placements,omitempty"`

	// CurrentRevision is the number of the template revision instances are
	// being rolled to (see ControllerRevisions owned by the Workload).
	//
	// +optional
	CurrentRevision int64 `json:"currentRevision,omitempty"`

	// CurrentTemplateHash is the hash of the current template.
	//
	// +optional
	CurrentTemplateHash string `json:"currentTemplateHash,omitempty"`

	// Rollout reports, per city, the revision it runs and where it stands
	// in the rollout of the current revision.
	//
	// +optional
	Rollout *WorkloadRolloutStatus `json:"rollout,omitempty"`

	// Health sums the Workload up in one word, decided by the management
	// plane from its cities' states: what `datumctl compute status` and
	// `workloads` print.
	//
	// +optional
	Health WorkloadHealth `json:"health,omitempty"`
}

// WorkloadHealth sums a Workload up in one word.
//
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Failing;ScaledToZero;Unknown;Suspending;Suspended
type WorkloadHealth string

const (
	// HealthHealthy means every city is done (ready, or soaking a new revision
	// it is ready at) and the management plane has applied the latest spec.
	HealthHealthy WorkloadHealth = "Healthy"
	// HealthProgressing means cities are getting to the spec; nothing has failed.
	HealthProgressing WorkloadHealth = "Progressing"
	// HealthDegraded means a city failed or is unreachable, and replicas serve
	// elsewhere.
	HealthDegraded WorkloadHealth = "Degraded"
	// HealthFailing means a city failed and no replica serves.
	HealthFailing WorkloadHealth = "Failing"
	// HealthScaledToZero means every city is done with no replica desired.
	HealthScaledToZero WorkloadHealth = "ScaledToZero"
	// HealthUnknown means cities are unreachable and no reachable replica
	// serves: compute cannot tell.
	HealthUnknown WorkloadHealth = "Unknown"
	// HealthSuspending means the Workload is suspended (or resuming) and not
	// every city has confirmed it yet.
	HealthSuspending WorkloadHealth = "Suspending"
	// HealthSuspended means every city confirmed the suspension: every Instance
	// stopped, none deleted.
	HealthSuspended WorkloadHealth = "Suspended"
)

// CityState is where one city of a placement stands, decided by the
// management plane (one place: the CLI and every other reader show it as
// written).
//
// +kubebuilder:validation:Enum=Progressing;WaitingForWave;Soaking;Ready;ScaledToZero;Suspending;Suspended;Unreachable;FailedOver;Removing;Failed
type CityState string

const (
	// CityStateProgressing means the city is getting to its spec (creating,
	// replacing, starting or removing Instances, or waiting for its
	// deployment, quota, network or referenced data); reason says what it
	// waits for.
	CityStateProgressing CityState = "Progressing"
	// CityStateWaitingForWave means a rollout across cities holds the city at its
	// previous revision until its wave.
	CityStateWaitingForWave CityState = "WaitingForWave"
	// CityStateSoaking means the city runs the new revision, every replica ready,
	// and soaks before the next wave.
	CityStateSoaking CityState = "Soaking"
	// CityStateReady means every desired replica is ready and up to date, no other
	// Instance remains.
	CityStateReady CityState = "Ready"
	// CityStateScaledToZero means no replica desired, none left.
	CityStateScaledToZero CityState = "ScaledToZero"
	// CityStateSuspending means the Workload is suspended and the city's cell has
	// not confirmed every Instance stopped yet.
	CityStateSuspending CityState = "Suspending"
	// CityStateSuspended means the city's cell reports every Instance stopped (or
	// the city has no deployment: nothing runs there).
	CityStateSuspended CityState = "Suspended"
	// CityStateUnreachable means the city's cell is not heard from; the counts are
	// the last known ones.
	CityStateUnreachable CityState = "Unreachable"
	// CityStateFailedOver means the city's cell is not heard from and its replicas
	// run in a fallback.
	CityStateFailedOver CityState = "FailedOver"
	// CityStateRemoving means the city is no longer placed; its deployment goes.
	CityStateRemoving CityState = "Removing"
	// CityStateFailed means the city cannot get to its spec by waiting: reason says
	// what a person must change (see the reason registry in docs/api.md).
	CityStateFailed CityState = "Failed"
)

// Done reports whether a city in state s has reached its spec: every
// desired replica ready at the current template (soaking included), or
// none desired.
func (s CityState) Done() bool {
	return s == CityStateReady || s == CityStateSoaking || s == CityStateScaledToZero
}

// InstanceBlockers names the Instances of a deployment's current template
// that are not ready for the worst reason any of them reports.
type InstanceBlockers struct {
	// Reason is the worst reason an Instance of the current template is
	// not ready for.
	Reason string `json:"reason"`

	// Message is the message of the first Instance (by name) reporting it.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Count is how many Instances report the reason.
	Count int32 `json:"count"`

	// Instances names them, sorted, at most 5.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Instances []string `json:"instances,omitempty"`
}

// WorkloadPlacementStatus reports one placement.
type WorkloadPlacementStatus struct {
	// Name of the placement.
	Name string `json:"name"`

	// Conditions: Available, Progressing, and AutoscalingReady and
	// AutoscalingLimited while the placement autoscales.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	ReplicaCounts `json:",inline"`

	// Cities report each city of the placement, sorted by city code,
	// including cities that have no deployment and why.
	//
	// +optional
	Cities []WorkloadCityStatus `json:"cities,omitempty"`
}

// WorkloadCityStatus reports one city of a placement.
type WorkloadCityStatus struct {
	// CityCode of the city.
	CityCode string `json:"cityCode"`

	// Location is the Location of the deployment, when the placement
	// reaches it; a city with two Locations has an entry for each.
	//
	// +optional
	Location *LocationReference `json:"location,omitempty"`

	// DeploymentName is the WorkloadDeployment running the city, empty when
	// the city has none (see reason).
	//
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`

	ReplicaCounts `json:",inline"`

	// Available is true when a replica in the city is ready. It is false
	// while the city is stale: compute cannot claim what it has not heard.
	//
	// +optional
	Available bool `json:"available"`

	// Suspended is true when the city's cell reports its deployment
	// suspended: every Instance stopped, none deleted (reason Suspended).
	//
	// +optional
	Suspended bool `json:"suspended,omitempty"`

	// Stale is true while the city's cell is unreachable: the counts are
	// the last known ones, reason is CellUnreachable and lastSeenTime says
	// when the cell was last heard from.
	//
	// +optional
	Stale bool `json:"stale,omitempty"`

	// LastSeenTime is the last time the city's cell was heard from; set
	// only while the city is stale.
	//
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`

	// State is where the city stands: Progressing, WaitingForWave,
	// Soaking, Ready, ScaledToZero, Suspending, Suspended, Unreachable,
	// FailedOver, Removing or Failed. Reason says why when it is not
	// Ready.
	//
	// +optional
	State CityState `json:"state,omitempty"`

	// ReplicasReady is the city's ReplicasReady verdict: every desired
	// replica ready and up to date, no other Instance left.
	//
	// +optional
	ReplicasReady bool `json:"replicasReady,omitempty"`

	// Reason is a CamelCase reason for the city's state: for a city that
	// is progressing or failed, the worst reason one of its Instances of
	// the current template is not ready for (see notReady), else what its
	// deployment waits for or does.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message explains the reason and what to do.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// NotReady names the Instances of the current template that are not
	// ready for the worst reason, as the city's cell reported them.
	//
	// +optional
	NotReady *InstanceBlockers `json:"notReady,omitempty"`

	// TemplateHash is the hash of the instance template the city's
	// instances are rolled to: as its cell reported it for the current
	// generation of its WorkloadDeployment, else as the management plane
	// wrote it. Instances whose spec.controller.templateHash differs run
	// an older template.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// RestartedAt is the restart time (RFC 3339) the city's template
	// carries, from a restart of the whole Workload or of this city;
	// empty when never restarted.
	//
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`

	// Wave is the city's wave in the rollout of the current revision
	// across cities (from 1); unset for a city without a deployment.
	//
	// +optional
	Wave int32 `json:"wave,omitempty"`

	// Revision is the number of the revision the city runs.
	//
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// Rollout is where the city stands in the rollout of the current
	// revision: Updated, Updating, Soaking, Waiting, Halted or RolledBack.
	//
	// +optional
	Rollout CityRolloutState `json:"rollout,omitempty"`

	// Failover is set on a Location of a placement with failover while its
	// cell is unreachable or its replicas run in a fallback: the phase,
	// since when, where to, and when they return.
	//
	// +optional
	Failover *CityFailoverStatus `json:"failover,omitempty"`

	// FailoverFor is set on a fallback's entry: the Location whose
	// replicas it runs while that Location's cell is unreachable.
	//
	// +optional
	FailoverFor *FailoverSource `json:"failoverFor,omitempty"`

	// Autoscaling is what the city's autoscaler reports, as its cell
	// reported it, while the placement autoscales.
	//
	// +optional
	Autoscaling *AutoscalingStatus `json:"autoscaling,omitempty"`
}

// FailoverPhase is where a Location stands in its failover.
//
// +kubebuilder:validation:Enum=Tolerating;Pending;FailedOver;Returning
type FailoverPhase string

const (
	// FailoverTolerating means the cell is unreachable, for less than the
	// placement's tolerationSeconds.
	FailoverTolerating FailoverPhase = "Tolerating"
	// FailoverPending means the toleration has passed but no fallback takes the
	// replicas yet (the Workload's limit of failed-over Locations, the
	// platform's failover rate, or no fallback reachable and ready).
	FailoverPending FailoverPhase = "Pending"
	// FailoverFailedOver means the replicas run in a fallback.
	FailoverFailedOver FailoverPhase = "FailedOver"
	// FailoverReturning means the cell is back and Available at its current
	// template; the fallback drains at returnAt unless it goes again.
	FailoverReturning FailoverPhase = "Returning"
)

// CityFailoverStatus is the failover of one Location.
type CityFailoverStatus struct {
	// Phase is Tolerating, Pending, FailedOver or Returning.
	Phase FailoverPhase `json:"phase"`

	// UnreachableSince is when compute found the cell unreachable; unset
	// while Returning.
	//
	// +optional
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`

	// FailoverAt is when the replicas fail over if the cell stays
	// unreachable (Tolerating), or when they did (FailedOver, Returning).
	//
	// +optional
	FailoverAt *metav1.Time `json:"failoverAt,omitempty"`

	// CityCode and Location are the fallback running the replicas.
	//
	// +optional
	CityCode string `json:"cityCode,omitempty"`
	// +optional
	Location *LocationReference `json:"location,omitempty"`

	// DeploymentName is the fallback's WorkloadDeployment.
	//
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`

	// Replicas is how many replicas the fallback runs for the Location.
	//
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReturnAt is when the fallback drains if the Location stays
	// reachable and Available (Returning).
	//
	// +optional
	ReturnAt *metav1.Time `json:"returnAt,omitempty"`

	// Message says what happened, why, and what comes next.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// FailoverSource names the Location a fallback runs replicas for.
type FailoverSource struct {
	// CityCode of the unreachable Location.
	CityCode string `json:"cityCode"`
	// Location that is unreachable.
	//
	// +optional
	Location *LocationReference `json:"location,omitempty"`
	// DeploymentName is its WorkloadDeployment.
	//
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`
}

// Workload runs one instance template in many cities.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=compute
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Deployments",type=integer,JSONPath=`.status.deployments`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the developer asks for.
	//
	// +required
	Spec WorkloadSpec `json:"spec"`

	// Status is aggregated from the Workload's deployments.
	//
	// +optional
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Workloads.
	Items []Workload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Workload{}, &WorkloadList{})
}
