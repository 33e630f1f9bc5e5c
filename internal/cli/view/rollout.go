package view

import (
	"fmt"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Rollout is the rollout of the current revision across cities, as the
// Workload reports it (status.rollout).
type Rollout struct {
	// Strategy is AllAtOnce, Waves or Canary.
	Strategy string `json:"strategy"`
	// Phase is Complete, Progressing, Paused, AwaitingApproval or Halted.
	Phase string `json:"phase"`
	// Wave is the wave in progress (from 1), 0 once complete; Waves the
	// number of waves.
	Wave  int32 `json:"wave"`
	Waves int32 `json:"waves"`
	// Message says what the rollout waits for, or why it halted.
	Message string `json:"message,omitempty"`
	// Halted is set when the rollout halted: waiting will not finish it.
	Halted bool `json:"halted,omitempty"`
}

// readRollout folds the rollout across cities (status.rollout) into p:
// the rollout's position, what a city waiting for its wave or rolled back
// waits for, and — when the server's Progressing condition says waiting
// cannot finish the rollout — that failure, after the cities' own (the
// reason a city failed says more about what to fix than the halt it
// caused).
func readRollout(p *Progress, w *computev1alpha.Workload) {
	r := w.Status.Rollout
	if r != nil && (w.Status.CurrentTemplateHash == "" || r.TemplateHash == w.Status.CurrentTemplateHash) {
		p.Rollout = &Rollout{Strategy: string(r.Strategy), Phase: string(r.Phase), Wave: r.Wave, Waves: r.Waves,
			Message: r.Message, Halted: r.Phase == computev1alpha.RolloutPhaseHalted}
		for i := range p.Cities {
			c := &p.Cities[i]
			switch computev1alpha.CityRolloutState(c.Rollout) {
			case computev1alpha.CityWaiting:
				_, c.Message = cityRolloutReason(r, c)
			case computev1alpha.CityRolledBack:
				c.Reason, c.Message = cityRolloutReason(r, c)
			}
		}
		if r.Phase != computev1alpha.RolloutPhaseComplete {
			p.Done = false
		}
	}
	if c := progressingFailure(w); c != nil && (c.Reason == computev1alpha.ReasonRolloutHalted || len(p.Failures) == 0) {
		words := "Rollout halted"
		if c.Reason != computev1alpha.ReasonRolloutHalted {
			words = ReasonWords(c.Reason)
		}
		p.Failures = append(p.Failures, Failure{City: haltedCity(r), Status: words, Reason: c.Reason, Message: c.Message})
		p.Done = false
	}
}

// haltedCity names the city that halted a rollout.
func haltedCity(r *computev1alpha.WorkloadRolloutStatus) string {
	if r == nil {
		return ""
	}
	for _, c := range r.Cities {
		if c.State == computev1alpha.CityHalted || c.State == computev1alpha.CityRolledBack {
			return c.CityCode
		}
	}
	return ""
}

// RolloutLine renders the rollout's position, "wave 1/2 (Progressing)",
// empty without a rollout of several waves.
func (p Progress) RolloutLine() string {
	r := p.Rollout
	if r == nil || r.Waves <= 1 && r.Phase != string(computev1alpha.RolloutPhaseHalted) {
		return ""
	}
	if r.Wave == 0 {
		return fmt.Sprintf("%d waves, complete", r.Waves)
	}
	return fmt.Sprintf("wave %d/%d %s", r.Wave, r.Waves, r.Phase)
}

// cityRolloutReason is the reason and message status.rollout gives city c.
func cityRolloutReason(r *computev1alpha.WorkloadRolloutStatus, c *City) (reason, message string) {
	for _, rc := range r.Cities {
		if rc.Placement == c.Placement && rc.CityCode == c.City && rc.Location.NameOrEmpty() == c.Location {
			return rc.Reason, rc.Message
		}
	}
	return "", ""
}
