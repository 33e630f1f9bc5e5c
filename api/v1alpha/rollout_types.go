package v1alpha

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CityRolloutStrategyType says in which order a template change reaches
// the cities of a Workload.
//
// +kubebuilder:validation:Enum=AllAtOnce;Waves;Canary
type CityRolloutStrategyType string

const (
	// AllAtOnceCityRollout gives every city a new template at once (the
	// default, and compute's behaviour before rollouts across cities).
	AllAtOnceCityRollout CityRolloutStrategyType = "AllAtOnce"
	// WavesCityRollout rolls the cities in the explicit waves of
	// spec.rollout.waves, in order.
	WavesCityRollout CityRolloutStrategyType = "Waves"
	// CanaryCityRollout rolls one canary city first, then the other cities
	// in waves of spec.rollout.canary.waveSize.
	CanaryCityRollout CityRolloutStrategyType = "Canary"
)

// RolloutFailurePolicy says what happens to the cities of a wave when the
// rollout halts.
//
// +kubebuilder:validation:Enum=Halt;Rollback
type RolloutFailurePolicy string

const (
	// HaltOnFailure stops the rollout: no further city gets the new
	// template; the cities that have it keep it.
	HaltOnFailure RolloutFailurePolicy = "Halt"
	// RollbackOnFailure stops the rollout and returns the cities of the
	// halted wave to the revision they ran before.
	RollbackOnFailure RolloutFailurePolicy = "Rollback"
)

// RolloutApproval says whether waves after the first start on their own.
//
// +kubebuilder:validation:Enum=Automatic;Manual
type RolloutApproval string

const (
	// AutomaticRolloutApproval starts each wave once the previous one has
	// soaked.
	AutomaticRolloutApproval RolloutApproval = "Automatic"
	// ManualRolloutApproval waits, after each wave, for
	// `datumctl compute rollout approve` (the RolloutApprovedAnnotation).
	ManualRolloutApproval RolloutApproval = "Manual"
)

// WorkloadRollout says how a template change travels between the cities of
// a Workload. Scale changes are not template changes: they reach every city
// at once whatever the rollout says.
//
// +kubebuilder:validation:XValidation:rule="(has(self.strategy) && self.strategy == 'Waves') == (has(self.waves) && size(self.waves) > 0)",message="waves must be set when, and only when, strategy is Waves",fieldPath=".waves"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || (has(self.strategy) && self.strategy == 'Canary')",message="canary may only be set when strategy is Canary",fieldPath=".canary"
type WorkloadRollout struct {
	// Strategy is AllAtOnce (default), Waves or Canary.
	//
	// +optional
	// +kubebuilder:default=AllAtOnce
	Strategy CityRolloutStrategyType `json:"strategy,omitempty"`

	// Waves are the cities of each wave, in order (strategy Waves). A city
	// of the Workload that no wave names is rolled in one last wave, after
	// the listed ones.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Waves []RolloutWave `json:"waves,omitempty"`

	// Canary configures the canary strategy.
	//
	// +optional
	Canary *CanaryRollout `json:"canary,omitempty"`

	// MaxUnavailableCities is how many cities (a number, or a percentage of
	// the Workload's cities, rounded up) may be updating at the same time,
	// across the whole Workload: a city counts from the moment it gets the
	// new template until all its replicas are ready again. Unset, every
	// city of the current wave may update at once. Inside a city,
	// placements[].rolloutStrategy.maxUnavailable bounds the instances.
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="must be a number of cities of at least 1, or a percentage from 1% to 100%"
	MaxUnavailableCities *intstr.IntOrString `json:"maxUnavailableCities,omitempty"`

	// SoakSeconds is how long every replica of a wave must have been ready
	// at the new revision before the wave counts as done and the next one
	// starts. Defaults to 0.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`

	// ProgressDeadlineSeconds is how long a city may take, from the moment
	// it gets the new template, until all its replicas are ready; a city
	// that takes longer halts the rollout (ProgressDeadlineExceeded).
	// Defaults to 600.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// OnFailure is Halt (default) or Rollback. A city whose Instances report
	// ImageUnavailable, InstanceCrashing or ConfigurationError, or that
	// passes its progress deadline, halts the rollout: later waves keep the
	// revision they run, and the Workload reports Progressing=False with
	// reason RolloutHalted. With Rollback the cities of the halted wave also
	// return to the revision they ran before.
	//
	// +optional
	// +kubebuilder:default=Halt
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`

	// Approval is Automatic (default) or Manual: with Manual every wave
	// after the first waits for `datumctl compute rollout approve`.
	//
	// +optional
	// +kubebuilder:default=Automatic
	Approval RolloutApproval `json:"approval,omitempty"`

	// Paused stops the rollout between cities: no further city gets the new
	// template until it is false again. Cities already updating finish.
	//
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// RolloutWave is one wave of cities.
type RolloutWave struct {
	// CityCodes are the cities of the wave. Every placement's deployment in
	// these cities is rolled in this wave.
	//
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[A-Z]{3}$`
	CityCodes []string `json:"cityCodes"`
}

// CanaryRollout rolls one city first, then the rest in waves.
type CanaryRollout struct {
	// CityCode is the canary city. Defaults to the first of the Workload's
	// cities in alphabetical order.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	CityCode string `json:"cityCode,omitempty"`

	// WaveSize is the most cities of each wave after the canary: a number,
	// or a percentage of the Workload's cities (rounded up). Defaults to
	// 100%: every other city in one wave.
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="must be a number of cities of at least 1, or a percentage from 1% to 100%"
	WaveSize *intstr.IntOrString `json:"waveSize,omitempty"`
}

// RolloutPhase is the state of a rollout across cities.
type RolloutPhase string

const (
	// RolloutPhaseComplete means every city runs the current revision and has
	// soaked.
	RolloutPhaseComplete RolloutPhase = "Complete"
	// RolloutPhaseProgressing means a wave is updating or soaking.
	RolloutPhaseProgressing RolloutPhase = "Progressing"
	// RolloutPhasePaused means spec.rollout.paused holds the next cities.
	RolloutPhasePaused RolloutPhase = "Paused"
	// RolloutPhaseAwaitingApproval means the next wave waits for approval.
	RolloutPhaseAwaitingApproval RolloutPhase = "AwaitingApproval"
	// RolloutPhaseHalted means a city failed; later waves keep their revision.
	RolloutPhaseHalted RolloutPhase = "Halted"
)

// CityRolloutState is where one city stands in a rollout.
type CityRolloutState string

const (
	// CityUpdated means the city runs the current revision and has soaked.
	CityUpdated CityRolloutState = "Updated"
	// CityUpdating means the city has the current revision; its replicas are
	// not all ready yet.
	CityUpdating CityRolloutState = "Updating"
	// CitySoaking means every replica is ready at the current revision; the
	// soak time has not passed yet.
	CitySoaking CityRolloutState = "Soaking"
	// CityWaiting means the city keeps its revision until its wave starts.
	CityWaiting CityRolloutState = "Waiting"
	// CityHalted means the city failed at the current revision and halted the
	// rollout.
	CityHalted CityRolloutState = "Halted"
	// CityRolledBack means the rollout halted and the city returned to the
	// revision it ran before.
	CityRolledBack CityRolloutState = "RolledBack"
)

// WorkloadRolloutStatus reports how the current revision travels between
// the cities.
type WorkloadRolloutStatus struct {
	// Revision is the number of the revision being rolled out.
	//
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// TemplateHash is the template hash of that revision.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// Strategy is the strategy in force.
	//
	// +optional
	Strategy CityRolloutStrategyType `json:"strategy,omitempty"`

	// Phase is Complete, Progressing, Paused, AwaitingApproval or Halted.
	//
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// Wave is the wave in progress, from 1; 0 once complete.
	//
	// +optional
	Wave int32 `json:"wave,omitempty"`

	// Waves is the number of waves.
	//
	// +optional
	Waves int32 `json:"waves,omitempty"`

	// Message explains the phase and what to do.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Cities report each city's revision and state, in wave order.
	//
	// +optional
	Cities []CityRolloutStatus `json:"cities,omitempty"`
}

// CityRolloutStatus is one placement × city in a rollout.
type CityRolloutStatus struct {
	// Placement is the placement name.
	Placement string `json:"placement"`

	// CityCode is the city.
	CityCode string `json:"cityCode"`

	// Location is the Location of the deployment; a city with two
	// Locations has an entry for each.
	//
	// +optional
	Location *LocationReference `json:"location,omitempty"`

	// Wave is the city's wave, from 1.
	Wave int32 `json:"wave"`

	// Revision is the number of the revision the city runs; 0 when it is
	// no longer in the history.
	//
	// +optional
	Revision int64 `json:"revision,omitempty"`

	// TemplateHash is the template hash of the revision the city runs.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// State is Updated, Updating, Soaking, Waiting, Halted or RolledBack.
	State CityRolloutState `json:"state"`

	// Reason is the CamelCase reason of a halted city.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says what the city waits for, or why it halted.
	//
	// +optional
	Message string `json:"message,omitempty"`
}
