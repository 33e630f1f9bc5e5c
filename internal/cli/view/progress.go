package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/status"
)

// Snapshot is everything read about one Workload at one moment.
type Snapshot struct {
	// Workload is the Workload; nil when it does not exist. Its status
	// says what state every city is in: the view reads it, never works
	// it out again.
	Workload *computev1alpha.Workload
	// Instances are its Instances (workload-uid label), read only to name
	// the ones that fail.
	Instances []computev1alpha.Instance
	// Now is when it was read: "last seen … ago" is measured from it.
	Now time.Time
}

// Expectation is what a wait needs to see beyond a settled rollout.
type Expectation struct {
	// CityRestarts maps a city code to the restartedAt time a city restart
	// wrote: the city is not done until the Workload's status says its
	// template carries that time (or a later one).
	CityRestarts map[string]string
	// Suspend says the workload was suspended: a city is done once its
	// cell reports it suspended (every instance stopped, none deleted),
	// or when it has no deployment (nothing runs there).
	Suspend bool
}

// City states, the word after the counts in a progress line.
const (
	StateReady          = "ready"
	StateScaledToZero   = "scaled to zero"
	StateScalingDown    = "scaling down"
	StateUpdating       = "updating"
	StateStarting       = "starting"
	StateSyncing        = "syncing"
	StateRemoving       = "removing"
	StateRestartPending = "restart pending"
	StateNoDeployment   = "waiting for deployment"
	StateNotEnabled     = "not enabled"
	StateLocationWait   = "waiting for location"
	StateConflict       = "name conflict"
	// StateUnreachable is a city whose cell is not heard from; its counts
	// are the last known ones.
	StateUnreachable = "unreachable"
	// StateSuspended is a city whose cell reports the workload suspended:
	// every instance stopped, none deleted.
	StateSuspended = "suspended"
	// StateSuspending is a city asked to suspend whose cell has not
	// confirmed every instance stopped yet.
	StateSuspending = "suspending"
)

// City is the rollout state of one placement in one city.
type City struct {
	// City is the city code.
	City string `json:"city"`
	// Location is the name of the Location the city's deployment runs in,
	// when the placement reaches one (a city with two Locations has a City
	// for each).
	Location string `json:"location,omitempty"`
	// Placement is the placement name.
	Placement string `json:"placement"`
	// Deployment is the WorkloadDeployment running the city, if any.
	Deployment string `json:"deployment,omitempty"`
	// Desired, Ready, Updated and Replicas are the instance counts.
	Desired  int32 `json:"desired"`
	Ready    int32 `json:"ready"`
	Updated  int32 `json:"updated"`
	Replicas int32 `json:"replicas"`
	// State is a short phrase: ready, starting, updating, quota exceeded...
	State string `json:"state"`
	// Reason and Message explain a city that is not done.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Done is set when the city runs the desired template at the desired
	// scale, every instance ready.
	Done bool `json:"done"`
	// Failed is set when the city cannot get done by waiting.
	Failed bool `json:"failed,omitempty"`
	// Stale is set while the city's cell is not heard from: the counts
	// are the last known ones, last seen at LastSeenTime.
	Stale        bool         `json:"stale,omitempty"`
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`
	// Wave, Revision and Rollout are the city's wave, the revision it runs
	// and its rollout state (Updated, Updating, Soaking, Waiting, Halted,
	// RolledBack), from the Workload's status.rollout.
	Wave     int32  `json:"wave,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	Rollout  string `json:"rollout,omitempty"`
	// Failover is the city's failover, while its cell is unreachable or
	// its replicas run in a fallback; FailoverFor, on a fallback, is the
	// city it runs replicas for.
	Failover    *computev1alpha.CityFailoverStatus `json:"failover,omitempty"`
	FailoverFor string                             `json:"failoverFor,omitempty"`
}

// StateText is the city's state with its failover, for a table.
func (c City) StateText() string {
	if f := failoverState(c); f != "" {
		return c.State + "; " + f
	}
	return c.State
}

// Failure is an Instance (or city) that reached a state waiting will not
// fix.
type Failure struct {
	// Instance is the failing instance; empty for a city-level failure.
	Instance string `json:"instance,omitempty"`
	// City is the city it runs in.
	City string `json:"city"`
	// Status is the status in words ("Failed (image unavailable)").
	Status string `json:"status"`
	// Reason is the condition reason.
	Reason string `json:"reason"`
	// Message is the condition message.
	Message string `json:"message,omitempty"`
}

// Progress is the rollout state of a Workload.
type Progress struct {
	// Name of the workload.
	Name string `json:"name"`
	// Revision is the current template revision (0 when not reported).
	Revision int64 `json:"revision,omitempty"`
	// Desired, Ready and Updated sum the cities.
	Desired int32 `json:"desired"`
	Ready   int32 `json:"ready"`
	Updated int32 `json:"updated"`
	// Cities are sorted by city code, then placement.
	Cities []City `json:"cities"`
	// Waiting says what the workload as a whole waits for (the management
	// plane to catch up); empty otherwise.
	Waiting string `json:"waiting,omitempty"`
	// Done is set when every city is done and the management plane has
	// observed the latest spec.
	Done bool `json:"done"`
	// Failures are terminal failures of instances on the current template
	// and of cities, worst first (a halted rollout across cities first);
	// none while the management plane has not applied the latest spec.
	Failures []Failure `json:"failures,omitempty"`
	// Rollout is the rollout across cities; nil when not reported.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Assess computes the progress of s's Workload toward its spec from what
// its status says of each city (status.placements[].cities and
// status.rollout).
func Assess(s Snapshot, exp Expectation) Progress {
	w := s.Workload
	p := Progress{Name: w.Name, Revision: w.Status.CurrentRevision}
	if w.Status.ObservedGeneration < w.Generation {
		p.Waiting = fmt.Sprintf("waiting for the management plane to apply generation %d", w.Generation)
	}
	instancesOf := map[string][]*computev1alpha.Instance{}
	for i := range s.Instances {
		inst := &s.Instances[i]
		name := inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
		instancesOf[name] = append(instancesOf[name], inst)
	}
	for _, ps := range w.Status.Placements {
		for _, cs := range ps.Cities {
			c := assessCity(ps.Name, cs, instancesOf[cs.DeploymentName], exp, s.Now)
			p.Cities = append(p.Cities, c)
			if cs.DeploymentName != "" && cs.Reason != computev1alpha.ReasonDeploymentRemoving {
				p.Failures = append(p.Failures, instanceFailures(instancesOf[cs.DeploymentName], cs)...)
			}
		}
	}
	slices.SortFunc(p.Cities, func(a, b City) int {
		return cmp.Or(cmp.Compare(a.City, b.City), cmp.Compare(a.Placement, b.Placement))
	})

	p.Done = p.Waiting == ""
	for _, c := range p.Cities {
		if c.State != StateRemoving {
			p.Desired += c.Desired
			p.Ready += c.Ready
			p.Updated += c.Updated
		}
		p.Done = p.Done && c.Done
		if c.Failed {
			p.Failures = append(p.Failures, Failure{City: c.City, Status: c.State, Reason: c.Reason, Message: c.Message})
		}
	}
	slices.SortStableFunc(p.Failures, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(status.Severity(b.Reason), status.Severity(a.Reason)),
			cmp.Compare(a.City, b.City), cmp.Compare(a.Instance, b.Instance))
	})
	assessRollout(&p, w)
	if p.Waiting != "" {
		// Until the management plane applies the latest spec, the status
		// and the failures it names are those of the spec before it,
		// which the latest may fix (a rollback from a broken image).
		p.Failures = nil
	}
	return p
}

// assessCity puts the state the Workload's status reports for one city of
// a placement into words, naming the worst of its instances when it is
// not ready.
func assessCity(placement string, cs computev1alpha.WorkloadCityStatus, instances []*computev1alpha.Instance, exp Expectation, now time.Time) City {
	c := City{City: cs.CityCode, Location: cs.Location.NameOrEmpty(), Placement: placement, Deployment: cs.DeploymentName,
		Desired: cs.DesiredReplicas, Ready: cs.ReadyReplicas, Updated: cs.UpdatedReplicas, Replicas: cs.Replicas,
		Reason: cs.Reason, Message: cs.Message, Wave: cs.Wave, Revision: cs.Revision, Rollout: string(cs.Rollout),
		Failover: cs.Failover.DeepCopy()}
	if cs.FailoverFor != nil {
		c.FailoverFor = cs.FailoverFor.CityCode
	}
	if want, ok := exp.CityRestarts[cs.CityCode]; ok && !restartApplied(cs.RestartedAt, want) {
		c.State, c.Reason = StateRestartPending, ""
		c.Message = "waiting for the management plane to pass the restart to the city"
		return c
	}
	if seen := cs.LastSeenTime; cs.Stale && seen != nil {
		// Nothing about the city can be trusted until it is heard from.
		c.Stale, c.LastSeenTime = true, seen.DeepCopy()
		c.State = fmt.Sprintf("%s (last seen %s ago)", StateUnreachable, duration.HumanDuration(now.Sub(seen.Time)))
		return c
	}
	switch {
	case cs.Suspended:
		c.State, c.Done, c.Reason, c.Message = StateSuspended, exp.Suspend, "", ""
		return c
	case exp.Suspend && cs.DeploymentName == "":
		c.State, c.Done = StateNoDeployment, true // nothing runs there
		return c
	case exp.Suspend || cs.Reason == computev1alpha.ReasonSuspended:
		c.State = StateSuspending
		return c
	}
	switch cs.Reason {
	case computev1alpha.ReasonLocationNotBound:
		c.State, c.Failed = StateNotEnabled, true
		return c
	case computev1alpha.ReasonDeploymentConflict:
		c.State, c.Failed = StateConflict, true
		return c
	case computev1alpha.ReasonLocationNotReady:
		c.State = StateLocationWait
		return c
	case computev1alpha.ReasonDeploymentRemoving:
		c.State = StateRemoving
		return c
	case computev1alpha.ReasonDeploymentPending:
		c.State = StateSyncing
		if cs.DeploymentName == "" {
			c.State = StateNoDeployment
		}
		return c
	}
	c.Reason, c.Message = "", ""
	if c.Desired == 0 {
		c.State, c.Done = StateScaledToZero, c.Replicas == 0
		if !c.Done {
			c.State = StateScalingDown
		}
		return c
	}
	if c.Ready == c.Desired && c.Updated == c.Desired && c.Replicas == c.Desired {
		c.State, c.Done = StateReady, true
		return c
	}
	// Name the worst instance problem on the city's template; fall back
	// to the reason the status gives a city with no replica ready.
	c.State = StateStarting
	if worst, ok := worstInstance(instances, cs.TemplateHash); ok {
		c.State, c.Reason, c.Message = worst.Short(), worst.Reason, worst.Message
	} else if !cs.Available {
		c.Reason, c.Message = cs.Reason, cs.Message
	}
	switch {
	case c.Updated < c.Desired && c.Replicas > 0 && c.Reason == "":
		c.State = StateUpdating
	case c.Replicas > c.Desired && c.Reason == "":
		c.State = StateScalingDown
	}
	return c
}

// restartApplied reports whether the restart time got (what the city's
// template carries) is want or later.
func restartApplied(got, want string) bool {
	if got == want {
		return true
	}
	g, err1 := time.Parse(time.RFC3339, got)
	w, err2 := time.Parse(time.RFC3339, want)
	return err1 == nil && err2 == nil && !g.Before(w)
}

// worstInstance returns the status of the worst not-available instance
// created from the template with hash; ok is false when there is none.
func worstInstance(instances []*computev1alpha.Instance, hash string) (InstanceStatus, bool) {
	var worst InstanceStatus
	found := false
	for _, inst := range instances {
		if !onTemplate(inst, hash) {
			continue
		}
		s := Instance(inst)
		if s.Phase == PhaseAvailable || s.Phase == PhaseTerminating {
			continue
		}
		if !found || status.Severity(s.Reason) > status.Severity(worst.Reason) {
			worst, found = s, true
		}
	}
	return worst, found
}

// onTemplate reports whether inst was created from the template with hash
// and is not being deleted.
func onTemplate(inst *computev1alpha.Instance, hash string) bool {
	return inst.DeletionTimestamp == nil && inst.Spec.Controller != nil && inst.Spec.Controller.TemplateHash == hash
}

// instanceFailures returns the instances of city cs on its current
// template that failed terminally.
func instanceFailures(instances []*computev1alpha.Instance, cs computev1alpha.WorkloadCityStatus) []Failure {
	var out []Failure
	for _, inst := range instances {
		if !onTemplate(inst, cs.TemplateHash) {
			continue
		}
		if s := Instance(inst); s.Terminal {
			out = append(out, Failure{Instance: inst.Name, City: cs.CityCode, Status: s.String(), Reason: s.Reason, Message: s.Message})
		}
	}
	return out
}

// Line renders the progress on one line: "DFW 2/2 ready · LHR 1/2
// starting".
func (p Progress) Line() string {
	seen := map[string]int{}
	for _, c := range p.Cities {
		seen[c.City]++
	}
	parts := make([]string, 0, len(p.Cities)+1)
	for _, c := range p.Cities {
		parts = append(parts, c.Summary(seen[c.City] > 1))
	}
	switch {
	case p.Waiting != "":
		// The cities still show the previous spec.
		return p.Waiting
	case len(parts) == 0:
		return "no cities"
	}
	if r := p.RolloutLine(); r != "" {
		parts = append([]string{r}, parts...)
	}
	return strings.Join(parts, " · ")
}

// Summary renders a city as "DFW 2/2 ready"; withPlacement names the
// placement too ("DFW/edge 2/2 ready"), for a city several placements use.
func (c City) Summary(withPlacement bool) string {
	if c.State == StateRemoving {
		return fmt.Sprintf("%s removing (%d left)", c.Label(withPlacement), c.Replicas)
	}
	return fmt.Sprintf("%s %d/%d %s", c.Label(withPlacement), c.Ready, c.Desired, c.State)
}

// Label is the city code, with the placement when withPlacement is set.
func (c City) Label(withPlacement bool) string {
	if withPlacement {
		return c.City + "/" + c.Placement
	}
	return c.City
}

// Health words.
const (
	HealthHealthy     = "Healthy"
	HealthProgressing = "Progressing"
	HealthDegraded    = "Degraded"
	HealthFailing     = "Failing"
	HealthScaledDown  = "Scaled to zero"
	HealthUnknown     = "Unknown"
	HealthSuspended   = "Suspended"
	HealthSuspending  = "Suspending"
)

// Health sums the progress up in one word: Suspended (every city's cell
// reports the workload suspended), Suspending (some do, or are asked to),
// Healthy, Progressing,
// Degraded (failures or unreachable cities, some reachable instances
// serve), Failing (failures, none serve), Unknown (cities unreachable and
// no reachable instance serves) or Scaled to zero.
func (p Progress) Health() string {
	stale, freshReady := false, int32(0)
	suspended, suspending := 0, 0
	for _, c := range p.Cities {
		switch c.State {
		case StateSuspended:
			suspended++
		case StateSuspending:
			suspending++
		}
	}
	switch {
	case suspended > 0 && suspended == len(p.Cities):
		return HealthSuspended
	case suspended+suspending > 0:
		return HealthSuspending
	}
	for _, c := range p.Cities {
		if c.Stale {
			stale = true
		} else if c.State != StateRemoving {
			freshReady += c.Ready
		}
	}
	switch {
	case stale && freshReady > 0 && len(p.Failures) == 0:
		return HealthDegraded
	case stale && freshReady == 0:
		return HealthUnknown
	}
	switch {
	case p.Done && p.Desired == 0:
		return HealthScaledDown
	case p.Done:
		return HealthHealthy
	case len(p.Failures) > 0 && p.Ready > 0:
		return HealthDegraded
	case len(p.Failures) > 0:
		return HealthFailing
	}
	return HealthProgressing
}

// FailureGroup is failures that say the same thing in the same city.
type FailureGroup struct {
	// City the failures are in.
	City string `json:"city"`
	// Status, Reason and Message they share.
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Instances are the failing instances; empty for a city-level
	// failure.
	Instances []string `json:"instances,omitempty"`
}

// Subject names what failed: "LHR", "instance web-lhr-1 in LHR" or "2
// instances in LHR (web-lhr-0, web-lhr-1)".
func (g FailureGroup) Subject() string {
	switch len(g.Instances) {
	case 0:
		return g.City
	case 1:
		return fmt.Sprintf("instance %s in %s", g.Instances[0], g.City)
	}
	return fmt.Sprintf("%d instances in %s (%s)", len(g.Instances), g.City, strings.Join(g.Instances, ", "))
}

// GroupFailures groups failures by city, status and message, keeping the
// order of their first appearance (worst first).
func GroupFailures(failures []Failure) []FailureGroup {
	var out []FailureGroup
	index := map[[3]string]int{}
	for _, f := range failures {
		key := [3]string{f.City, f.Status, f.Message}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, FailureGroup{City: f.City, Status: f.Status, Reason: f.Reason, Message: f.Message})
		}
		if f.Instance != "" {
			out[i].Instances = append(out[i].Instances, f.Instance)
		}
	}
	return out
}
