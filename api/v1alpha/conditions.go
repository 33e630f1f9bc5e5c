package v1alpha

// Condition types.
const (
	// ConditionReady on an Instance is computed by compute: True when the
	// Instance is serving, otherwise the most specific reason it is not.
	ConditionReady = "Ready"
	// ConditionAvailable on an Instance is set by the runtime provider: True
	// while the instance serves. (Its former name, Running, is not read.)
	// On a WorkloadDeployment or Workload it is True when any replica is
	// ready.
	ConditionAvailable = "Available"
	// ConditionProgrammed on an Instance is set by the runtime provider: True
	// once the instance has been programmed into the infrastructure.
	ConditionProgrammed = "Programmed"
	// ConditionQuotaGranted on an Instance mirrors the Granted condition of
	// its ResourceClaim.
	ConditionQuotaGranted = "QuotaGranted"
	// ConditionProgressing on a WorkloadDeployment or Workload is True while
	// a rollout or scale is under way.
	ConditionProgressing = "Progressing"
	// ConditionReplicasReady on a WorkloadDeployment is True when every
	// desired replica is ready and up to date. When False, its reason is the
	// worst failure an Instance of the current template reports (say
	// ImageUnavailable, while older Instances still serve), else
	// ReplicasNotReady.
	ConditionReplicasReady = "ReplicasReady"
	// ConditionFederated on a project WorkloadDeployment reports whether its
	// federation-plane copy is in place.
	ConditionFederated = "Federated"
	// ConditionFailedOver, on a Workload with a placement that has
	// failover, is True while replicas of an unreachable Location run in a
	// fallback.
	ConditionFailedOver = "FailedOver"
)

// Instance Ready reasons, from blocked to serving.
const (
	// ReasonPendingQuota means the Quota scheduling gate is still present.
	ReasonPendingQuota = "PendingQuota"
	// ReasonPendingNetwork means the Network scheduling gate is still present.
	ReasonPendingNetwork = "PendingNetwork"
	// ReasonNetworkUnavailable means the networking service refused a
	// NetworkBinding of the Instance (NetworkingIntegration gate on): the
	// message names the network, the binding and the service's reason.
	ReasonNetworkUnavailable = "NetworkUnavailable"
	// ReasonSchedulingGatesPresent means an unknown scheduling gate holds the
	// Instance.
	ReasonSchedulingGatesPresent = "SchedulingGatesPresent"
	// ReasonImageUnavailable means the provider cannot pull the image.
	ReasonImageUnavailable = "ImageUnavailable"
	// ReasonInstanceCrashing means the instance starts and exits repeatedly.
	ReasonInstanceCrashing = "InstanceCrashing"
	// ReasonConfigurationError means the provider rejected the instance's
	// configuration.
	ReasonConfigurationError = "ConfigurationError"
	// ReasonProvisioning means the provider is still bringing the instance up.
	ReasonProvisioning = "Provisioning"
	// ReasonAvailable means the instance serves.
	ReasonAvailable = "Available"
	// ReasonNotAvailable means the provider reports the instance as not
	// available without a more specific reason.
	ReasonNotAvailable = "NotAvailable"
	// ReasonTerminating means the instance is being deleted.
	ReasonTerminating = "Terminating"
	// ReasonNetworkPolicyNotEnforced on Programmed (False) means the
	// instance runs, and its network policy is written, but the cell does
	// not enforce network policies: the ingress restrictions it declares do
	// not hold. It does not hold Ready, Available or a rollout back.
	ReasonNetworkPolicyNotEnforced = "NetworkPolicyNotEnforced"
)

// QuotaGranted reasons.
const (
	// ReasonPendingEvaluation means the claim exists but has not been
	// evaluated yet.
	ReasonPendingEvaluation = "PendingEvaluation"
	// ReasonQuotaAvailable means the claim was granted.
	ReasonQuotaAvailable = "QuotaAvailable"
	// ReasonQuotaExceeded means the claim was denied: the project is at its
	// limit.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonValidationFailed means the quota system rejected the claim as
	// invalid.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonQuotaNoBudget means the claim is pending because the project has
	// no allowance for a requested resource type.
	ReasonQuotaNoBudget = "QuotaNoBudget"
	// ReasonQuotaDisabled means no quota backend is configured; Instances are
	// admitted without a claim.
	ReasonQuotaDisabled = "QuotaDisabled"
	// ReasonQuotaBackendUnavailable means the quota backend could not be
	// reached (network, TLS, 401, 5xx).
	ReasonQuotaBackendUnavailable = "QuotaBackendUnavailable"
	// ReasonQuotaProjectNotFound means the project's quota plane does not
	// exist.
	ReasonQuotaProjectNotFound = "QuotaProjectNotFound"
	// ReasonQuotaNamespaceNotFound means the claim namespace does not exist in
	// the project's quota plane.
	ReasonQuotaNamespaceNotFound = "QuotaNamespaceNotFound"
	// ReasonQuotaMisconfigured means the quota backend refused the claim
	// (403/422): registration missing or claiming rules mismatch.
	ReasonQuotaMisconfigured = "QuotaMisconfigured"
	// ReasonQuotaProjectIDUnresolvable means the cell cannot tell which project
	// an Instance belongs to (namespace labels missing).
	ReasonQuotaProjectIDUnresolvable = "QuotaProjectIDUnresolvable"
)

// WorkloadDeployment and Workload reasons.
const (
	// ReasonReplicasAvailable means at least one replica is ready.
	ReasonReplicasAvailable = "ReplicasAvailable"
	// ReasonNoReplicasDesired means the deployment is scaled to zero.
	ReasonNoReplicasDesired = "NoReplicasDesired"
	// ReasonNoReplicasReady means no replica is ready and no instance reports
	// a more specific reason.
	ReasonNoReplicasReady = "NoReplicasReady"
	// ReasonAllReplicasReady means every desired replica is ready and up to
	// date.
	ReasonAllReplicasReady = "AllReplicasReady"
	// ReasonReplicasNotReady means some desired replicas are not ready or not
	// up to date.
	ReasonReplicasNotReady = "ReplicasNotReady"
	// ReasonRollingUpdate means instances with an old template are being
	// replaced.
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonScalingUp means instances are being created.
	ReasonScalingUp = "ScalingUp"
	// ReasonScalingDown means instances are being removed.
	ReasonScalingDown = "ScalingDown"
	// ReasonRolloutComplete means the desired state has been reached.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonLocationNotBound means a placement names a city that is not bound
	// to the project (no LocationBinding).
	ReasonLocationNotBound = "LocationNotBound"
	// ReasonLocationNotReady means a placement names a city whose Location is
	// not ready.
	ReasonLocationNotReady = "LocationNotReady"
	// ReasonNoDeployments means none of a workload's placements produced a
	// WorkloadDeployment.
	ReasonNoDeployments = "NoDeployments"
	// ReasonDeploymentPending means a WorkloadDeployment has not reported
	// status for the latest generation yet.
	ReasonDeploymentPending = "DeploymentPending"
	// ReasonDeploymentConflict means a city's WorkloadDeployment name is
	// taken by a WorkloadDeployment that belongs to another Workload; compute
	// never adopts or overwrites it.
	ReasonDeploymentConflict = "DeploymentConflict"
	// ReasonDeploymentRemoving means a city no longer in the Workload's
	// placements still has a WorkloadDeployment, being deleted with its
	// instances.
	ReasonDeploymentRemoving = "DeploymentRemoving"
	// ReasonObservationFailed means the management plane could not read
	// an input the condition depends on (the project's Locations, the
	// Workload's deployments or revisions): the condition is Unknown
	// until the read succeeds; compute retries.
	ReasonObservationFailed = "ObservationFailed"
	// ReasonAdmissionNotEnforced means the project's control plane does not
	// send Workloads to compute's admission webhooks (no
	// ValidatingWebhookConfiguration holds validate.workloads.compute.datumapis.com
	// for their creates and updates, failing closed): the management plane
	// federates none of its Workloads' changes until it does, since it
	// cannot tell a Workload admission would refuse; what already runs
	// keeps running.
	ReasonAdmissionNotEnforced = "AdmissionNotEnforced"
	// ReasonCellUnreachable means the cell running a city has not been
	// heard from (see docs/faults.md): its last known figures are kept but
	// are stale, and the city's conditions are Unknown until it is heard
	// from again.
	ReasonCellUnreachable = "CellUnreachable"
	// ReasonFederated means the federation-plane copy is up to date.
	ReasonFederated = "Federated"
	// ReasonFederationFailed means the federation-plane copy could not be
	// written or removed.
	ReasonFederationFailed = "FederationFailed"
	// ReasonRolloutHalted means a city failed at the new revision and the
	// rollout across cities stopped (Progressing=False).
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolloutPaused means spec.rollout.paused holds the next cities.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutAwaitingApproval means the next wave waits for
	// `rollout approve`.
	ReasonRolloutAwaitingApproval = "RolloutAwaitingApproval"
	// ReasonWaveProgressing means a wave of cities is updating or soaking.
	ReasonWaveProgressing = "WaveProgressing"
	// ReasonProgressDeadlineExceeded means a city did not become ready at
	// the new revision within spec.rollout.progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonFailedOver means replicas of an unreachable Location run in a
	// fallback (condition FailedOver=True).
	ReasonFailedOver = "FailedOver"
	// ReasonFailoverPending means a Location is unreachable past its
	// toleration and no fallback runs its replicas yet, or is unreachable
	// within it (FailedOver=False: the message says which and when).
	ReasonFailoverPending = "FailoverPending"
	// ReasonNoFailover means no Location of the Workload is failed over or
	// unreachable (FailedOver=False).
	ReasonNoFailover = "NoFailover"
)
