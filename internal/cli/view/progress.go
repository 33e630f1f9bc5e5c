package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/status"
)

// Snapshot is a Workload read at one moment. Its status says where every
// city stands, decided by the management plane: the view reads it, never
// works it out again.
type Snapshot struct {
	// Workload is the Workload; nil when it does not exist.
	Workload *computev1alpha.Workload
	// Now is when it was read: "last seen … ago" is measured from it.
	Now time.Time
}

// Expectation is what a wait needs to see beyond the server's verdicts: that
// the management plane has seen the change the command made (as
// observedGeneration says for a spec change).
type Expectation struct {
	// CityRestarts maps a city code to the restartedAt time a city restart
	// wrote: the city is not done until the Workload's status says its
	// template carries that time (or a later one).
	CityRestarts map[string]string
	// Suspend says the workload was suspended: done once every city is
	// Suspended (every instance stopped, none deleted).
	Suspend bool
}

// City states as a progress line shows them, for the states whose words do
// not come from a reason.
const (
	StateReady          = "ready"
	StateScaledToZero   = "scaled to zero"
	StateRemoving       = "removing"
	StateRestartPending = "restart pending"
	StateUnreachable    = "unreachable"
	StateSuspended      = "suspended"
	StateSuspending     = "suspending"
	StateWaitingForWave = "waiting for its wave"
	StateSoaking        = "soaking"
	StateRolledBack     = "rolled back"
	StateStarting       = "starting"
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
	// Status is the city's state as the management plane decided it
	// (status.placements[].cities[].state).
	Status computev1alpha.CityState `json:"status,omitempty"`
	// State is Status in a short phrase: ready, starting, quota
	// exceeded...
	State string `json:"state"`
	// Reason and Message explain a city that is not done.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// NotReady names the instances of the city's current template that
	// are not ready for the worst reason, as the server reports them.
	NotReady *computev1alpha.InstanceBlockers `json:"notReady,omitempty"`
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
	// Autoscaling is what the city's autoscaler reports (bounds,
	// desired and current replicas, each metric against its target),
	// while its placement autoscales.
	Autoscaling *computev1alpha.AutoscalingStatus `json:"autoscaling,omitempty"`
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
	// More counts the instances failing the same way the server counted
	// but did not name.
	More int32 `json:"more,omitempty"`
}

// Progress is the rollout state of a Workload.
type Progress struct {
	// Name of the workload.
	Name string `json:"name"`
	// Revision is the current template revision (0 when not reported).
	Revision int64 `json:"revision,omitempty"`
	// Health is the server's summary (status.health).
	Health computev1alpha.WorkloadHealth `json:"health,omitempty"`
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
	// Failures are the failures the server reports, worst first: the
	// instances of failed cities (as the server names them), the cities,
	// then a halted rollout across cities; none while the management
	// plane has not applied the latest spec.
	Failures []Failure `json:"failures,omitempty"`
	// Rollout is the rollout across cities; nil when not reported.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Status is the status reader, kubectl's rollout-status shape: one
// Workload in; a one-line message, whether the rollout is done, and an
// error when the server says waiting cannot finish it.
func Status(s Snapshot, exp Expectation) (message string, done bool, err error) {
	p := Read(s, exp)
	if len(p.Failures) > 0 {
		f := p.Failures[0]
		return p.Line(), false, fmt.Errorf("%s cannot finish rolling out: %s in %s: %s", p.Name, f.Status, f.City, f.Message)
	}
	return p.Line(), p.Done, nil
}

// Read puts what s's Workload status says into a Progress: each city as
// the server decided it (status.placements[].cities), the rollout across
// cities (status.rollout) and the failures (Failed cities, and a
// Progressing condition False for a terminal reason).
func Read(s Snapshot, exp Expectation) Progress {
	w := s.Workload
	p := Progress{Name: w.Name, Revision: w.Status.CurrentRevision, Health: w.Status.Health}
	if w.Status.ObservedGeneration < w.Generation {
		p.Waiting = fmt.Sprintf("waiting for the management plane to apply generation %d", w.Generation)
	}
	for _, ps := range w.Status.Placements {
		for _, cs := range ps.Cities {
			p.Cities = append(p.Cities, readCity(ps.Name, cs, exp, s.Now))
		}
	}
	slices.SortFunc(p.Cities, func(a, b City) int {
		return cmp.Or(cmp.Compare(a.City, b.City), cmp.Compare(a.Placement, b.Placement))
	})
	p.Done = p.Waiting == ""
	for _, c := range p.Cities {
		if c.Status != computev1alpha.CityStateRemoving {
			p.Desired += c.Desired
			p.Ready += c.Ready
			p.Updated += c.Updated
		}
		p.Done = p.Done && c.Done
		if c.Failed {
			p.Failures = append(p.Failures, failuresOf(c)...)
		}
	}
	slices.SortStableFunc(p.Failures, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(status.Severity(b.Reason), status.Severity(a.Reason)),
			cmp.Compare(a.City, b.City), cmp.Compare(a.Instance, b.Instance))
	})
	readRollout(&p, w)
	if p.Waiting != "" {
		// Until the management plane applies the latest spec, the status
		// and the failures it names are those of the spec before it,
		// which the latest may fix (a rollback from a broken image).
		p.Failures, p.Done = nil, false
		if p.Health != computev1alpha.HealthSuspended && p.Health != computev1alpha.HealthSuspending {
			p.Health = computev1alpha.HealthProgressing
		}
	}
	return p
}

// readCity reads one city of a placement as the server reports it.
func readCity(placement string, cs computev1alpha.WorkloadCityStatus, exp Expectation, now time.Time) City {
	c := City{City: cs.CityCode, Location: cs.Location.NameOrEmpty(), Placement: placement, Deployment: cs.DeploymentName,
		Desired: cs.DesiredReplicas, Ready: cs.ReadyReplicas, Updated: cs.UpdatedReplicas, Replicas: cs.Replicas,
		Status: cs.State, Reason: cs.Reason, Message: cs.Message, NotReady: cs.NotReady.DeepCopy(),
		Wave: cs.Wave, Revision: cs.Revision, Rollout: string(cs.Rollout), Failover: cs.Failover.DeepCopy(),
		Autoscaling: cs.Autoscaling.DeepCopy(),
		Done:        cs.State.Done(), Failed: cs.State == computev1alpha.CityStateFailed}
	if cs.FailoverFor != nil {
		c.FailoverFor = cs.FailoverFor.CityCode
	}
	if seen := cs.LastSeenTime; cs.Stale && seen != nil {
		c.Stale, c.LastSeenTime = true, seen.DeepCopy()
	}
	c.State = stateWords(cs, now)
	switch want, ok := exp.CityRestarts[cs.CityCode]; {
	case ok && !restartApplied(cs.RestartedAt, want) && !c.Stale:
		c.Done, c.Failed = false, false
		c.State, c.Reason = StateRestartPending, ""
		c.Message = "waiting for the management plane to pass the restart to the city"
	case exp.Suspend:
		c.Done = cs.State == computev1alpha.CityStateSuspended
	}
	if c.Done {
		c.Reason, c.Message = "", ""
	}
	return c
}

// stateWords puts the server's state of a city into a short phrase: the
// state's own word, or for a city progressing or failed the registry's
// words for its reason.
func stateWords(cs computev1alpha.WorkloadCityStatus, now time.Time) string {
	switch cs.State {
	case computev1alpha.CityStateReady:
		if cs.Rollout == computev1alpha.CityRolledBack {
			return StateRolledBack
		}
		return StateReady
	case computev1alpha.CityStateScaledToZero:
		return StateScaledToZero
	case computev1alpha.CityStateRemoving:
		return StateRemoving
	case computev1alpha.CityStateUnreachable, computev1alpha.CityStateFailedOver:
		if cs.LastSeenTime == nil {
			return StateUnreachable
		}
		return fmt.Sprintf("%s (last seen %s ago)", StateUnreachable, duration.HumanDuration(now.Sub(cs.LastSeenTime.Time)))
	case computev1alpha.CityStateSuspended:
		return StateSuspended
	case computev1alpha.CityStateSuspending:
		return StateSuspending
	case computev1alpha.CityStateWaitingForWave:
		return StateWaitingForWave
	case computev1alpha.CityStateSoaking:
		return StateSoaking
	}
	if cs.Reason == computev1alpha.ReasonDeploymentPending && cs.DeploymentName == "" {
		return "waiting for deployment"
	}
	return ReasonWords(cs.Reason)
}

// ReasonWords is a reason as the registry words it for a progress line
// ("waiting for quota"); an unknown reason spelled out in lower case.
func ReasonWords(reason string) string {
	r, ok := status.Lookup(reason)
	switch {
	case ok && r.Words != "":
		return r.Words
	case ok && r.Detail != "":
		return r.Detail
	case reason == "":
		return StateStarting
	}
	return cmdutil.Humanize(reason)
}

// failuresOf lists a failed city's failures: each instance the server
// names, with how many more there are, else the city itself.
func failuresOf(c City) []Failure {
	nr := c.NotReady
	if nr == nil || nr.Reason != c.Reason || len(nr.Instances) == 0 {
		return []Failure{{City: c.City, Status: c.State, Reason: c.Reason, Message: c.Message}}
	}
	words := InstanceWords(nr.Reason).String()
	out := make([]Failure, 0, len(nr.Instances))
	for _, name := range nr.Instances {
		out = append(out, Failure{Instance: name, City: c.City, Status: words, Reason: nr.Reason, Message: nr.Message})
	}
	out[len(out)-1].More = max(nr.Count-int32(len(nr.Instances)), 0)
	return out
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

// progressingFailure is the Workload's Progressing condition when the
// server says waiting cannot finish the rollout; nil otherwise.
func progressingFailure(w *computev1alpha.Workload) *metav1.Condition {
	c := meta.FindStatusCondition(w.Status.Conditions, computev1alpha.ConditionProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || !status.Terminal(c.Reason) || c.ObservedGeneration < w.Generation {
		return nil
	}
	return c
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
	if c.Status == computev1alpha.CityStateRemoving {
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

// HealthWords renders the server's health word: "Scaled to zero" for
// ScaledToZero, Pending before the management plane has said.
func HealthWords(h computev1alpha.WorkloadHealth) string {
	switch h {
	case "":
		return "Pending"
	case computev1alpha.HealthScaledToZero:
		return "Scaled to zero"
	}
	return string(h)
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
	// More counts the failing instances the server did not name.
	More int32 `json:"more,omitempty"`
}

// Subject names what failed: "LHR", "instance web-lhr-1 in LHR" or "2
// instances in LHR (web-lhr-0, web-lhr-1)".
func (g FailureGroup) Subject() string {
	n := len(g.Instances) + int(g.More)
	names := strings.Join(g.Instances, ", ")
	if g.More > 0 {
		names += fmt.Sprintf(" and %d more", g.More)
	}
	switch {
	case len(g.Instances) == 0:
		return g.City
	case n == 1:
		return fmt.Sprintf("instance %s in %s", g.Instances[0], g.City)
	}
	return fmt.Sprintf("%d instances in %s (%s)", n, g.City, names)
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
		out[i].More += f.More
	}
	return out
}
