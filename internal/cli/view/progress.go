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
	"github.com/citycells/compute/internal/names"
	"github.com/citycells/compute/internal/status"
)

// Snapshot is everything read about one Workload at one moment.
type Snapshot struct {
	// Workload is the Workload; nil when it does not exist.
	Workload *computev1alpha.Workload
	// Deployments are its WorkloadDeployments (workload-uid label).
	Deployments []computev1alpha.WorkloadDeployment
	// Instances are its Instances (workload-uid label).
	Instances []computev1alpha.Instance
}

// Expectation is what a wait needs to see beyond a settled rollout.
type Expectation struct {
	// CityRestarts maps a city code to the restartedAt time a city restart
	// wrote: the city is not done until its WorkloadDeployment's template
	// carries that time (or a later one).
	CityRestarts map[string]string
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
)

// Now is the clock "last seen … ago" is measured with.
var Now = time.Now

// City is the rollout state of one placement in one city.
type City struct {
	// City is the city code.
	City string `json:"city"`
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
	// and of cities, worst first (a halted rollout across cities first).
	Failures []Failure `json:"failures,omitempty"`
	// Rollout is the rollout across cities; nil when not reported.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// Assess computes the progress of s's Workload toward its spec.
func Assess(s Snapshot, exp Expectation) Progress {
	w := s.Workload
	p := Progress{Name: w.Name, Revision: w.Status.CurrentRevision}
	if w.Status.ObservedGeneration < w.Generation {
		p.Waiting = fmt.Sprintf("waiting for the management plane to apply generation %d", w.Generation)
	}

	wds := map[cityKey]*computev1alpha.WorkloadDeployment{}
	byName := map[string]*computev1alpha.WorkloadDeployment{}
	for i := range s.Deployments {
		wd := &s.Deployments[i]
		wds[cityKey{wd.Spec.PlacementName, wd.Spec.CityCode}] = wd
		byName[wd.Name] = wd
	}
	instancesOf := map[string][]*computev1alpha.Instance{}
	for i := range s.Instances {
		inst := &s.Instances[i]
		name := inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]
		instancesOf[name] = append(instancesOf[name], inst)
	}
	reported := reportedCities(w)

	wanted := map[cityKey]bool{}
	for _, pl := range w.Spec.Placements {
		for _, code := range pl.CityCodes {
			key := cityKey{pl.Name, code}
			if wanted[key] {
				continue
			}
			wanted[key] = true
			var c City
			if wd := wds[key]; wd != nil {
				c = assessDeployment(wd, instancesOf[wd.Name], exp)
			} else {
				c = assessMissing(key, reported[key], pl.ScaleSettings.MinReplicas)
			}
			p.Cities = append(p.Cities, c)
		}
	}
	for key, wd := range wds {
		if !wanted[key] {
			p.Cities = append(p.Cities, City{City: key.city, Placement: key.placement, Deployment: wd.Name,
				Ready: wd.Status.ReadyReplicas, Replicas: wd.Status.Replicas, State: StateRemoving})
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
	p.Failures = append(p.Failures, instanceFailures(s.Instances, byName)...)
	slices.SortStableFunc(p.Failures, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(status.Severity(b.Reason), status.Severity(a.Reason)),
			cmp.Compare(a.City, b.City), cmp.Compare(a.Instance, b.Instance))
	})
	assessRollout(&p, w)
	return p
}

// cityKey identifies a placement in a city.
type cityKey struct{ placement, city string }

// reportedCities indexes the per-city entries of the Workload status.
func reportedCities(w *computev1alpha.Workload) map[cityKey]computev1alpha.WorkloadCityStatus {
	out := map[cityKey]computev1alpha.WorkloadCityStatus{}
	for _, ps := range w.Status.Placements {
		for _, cs := range ps.Cities {
			out[cityKey{ps.Name, cs.CityCode}] = cs
		}
	}
	return out
}

// assessMissing describes a wanted city that has no WorkloadDeployment,
// from what the management plane reported about it; min is the replicas
// the placement asks for.
func assessMissing(key cityKey, reported computev1alpha.WorkloadCityStatus, min int32) City {
	c := City{City: key.city, Placement: key.placement, Reason: reported.Reason, Message: reported.Message,
		Desired: min, State: StateNoDeployment}
	switch reported.Reason {
	case computev1alpha.ReasonLocationNotBound:
		c.State, c.Failed = StateNotEnabled, true
	case computev1alpha.ReasonLocationNotReady:
		c.State = StateLocationWait
	case computev1alpha.ReasonDeploymentConflict:
		c.State, c.Failed = StateConflict, true
	}
	return c
}

// assessDeployment describes a city from its WorkloadDeployment and the
// Instances it owns.
func assessDeployment(wd *computev1alpha.WorkloadDeployment, instances []*computev1alpha.Instance, exp Expectation) City {
	st := wd.Status
	c := City{City: wd.Spec.CityCode, Placement: wd.Spec.PlacementName, Deployment: wd.Name,
		Desired: desired(wd), Ready: st.ReadyReplicas, Updated: st.UpdatedReplicas, Replicas: st.Replicas}
	if want, ok := exp.CityRestarts[wd.Spec.CityCode]; ok && !restartApplied(wd, want) {
		c.State = StateRestartPending
		c.Message = "waiting for the management plane to pass the restart to the city"
		return c
	}
	if seen := st.LastSeenTime; seen != nil {
		// Nothing about the city can be trusted until it is heard from.
		c.Stale, c.LastSeenTime = true, seen.DeepCopy()
		c.State = fmt.Sprintf("%s (last seen %s ago)", StateUnreachable, duration.HumanDuration(Now().Sub(seen.Time)))
		c.Reason = computev1alpha.ReasonCellUnreachable
		if a := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAvailable); a != nil {
			c.Message = a.Message
		}
		return c
	}
	if st.ObservedGeneration < wd.Generation {
		c.State = StateSyncing
		c.Message = "waiting for the city to report on the latest change"
		return c
	}
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
	// Name the worst instance problem on the current template; fall back
	// to the deployment's Available condition.
	if worst, ok := worstInstance(instances, TemplateHash(wd)); ok {
		c.State, c.Reason, c.Message = worst.Short(), worst.Reason, worst.Message
	} else if a := meta.FindStatusCondition(st.Conditions, computev1alpha.ConditionAvailable); a != nil && a.Status != metav1.ConditionTrue && a.Reason != "" {
		c.State, c.Reason, c.Message = StateStarting, a.Reason, a.Message
	} else {
		c.State = StateStarting
	}
	switch {
	case c.Updated < c.Desired && c.Replicas > 0 && c.Reason == "":
		c.State = StateUpdating
	case c.Replicas > c.Desired && c.Reason == "":
		c.State = StateScalingDown
	}
	return c
}

// TemplateHash is the hash of the template wd's instances are rolled to:
// as the cell reported it for the current generation, else computed the
// way the cell computes it.
func TemplateHash(wd *computev1alpha.WorkloadDeployment) string {
	if wd.Status.TemplateHash != "" && wd.Status.ObservedGeneration >= wd.Generation {
		return wd.Status.TemplateHash
	}
	return names.TemplateHash(&wd.Spec.Template)
}

// desired is the replicas a deployment wants: spec.replicas, else
// minReplicas, as the cell decides.
func desired(wd *computev1alpha.WorkloadDeployment) int32 {
	if wd.Status.ObservedGeneration >= wd.Generation && wd.Status.DesiredReplicas > 0 {
		return wd.Status.DesiredReplicas
	}
	if wd.Spec.Replicas != nil {
		return *wd.Spec.Replicas
	}
	return wd.Spec.ScaleSettings.MinReplicas
}

// restartApplied reports whether wd's template carries the restart time
// want or a later one.
func restartApplied(wd *computev1alpha.WorkloadDeployment, want string) bool {
	got := wd.Spec.Template.Metadata.Annotations[computev1alpha.RestartedAtAnnotation]
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

// instanceFailures returns the instances on their deployment's current
// template that failed terminally.
func instanceFailures(instances []computev1alpha.Instance, byName map[string]*computev1alpha.WorkloadDeployment) []Failure {
	var out []Failure
	for i := range instances {
		inst := &instances[i]
		wd := byName[inst.Labels[computev1alpha.WorkloadDeploymentNameLabel]]
		if wd == nil || !onTemplate(inst, TemplateHash(wd)) {
			continue
		}
		if s := Instance(inst); s.Terminal {
			out = append(out, Failure{Instance: inst.Name, City: wd.Spec.CityCode, Status: s.String(), Reason: s.Reason, Message: s.Message})
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
)

// Health sums the progress up in one word: Healthy, Progressing,
// Degraded (failures or unreachable cities, some reachable instances
// serve), Failing (failures, none serve), Unknown (cities unreachable and
// no reachable instance serves) or Scaled to zero.
func (p Progress) Health() string {
	stale, freshReady := false, int32(0)
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
