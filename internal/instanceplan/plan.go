package instanceplan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// DefaultMaxUnavailable is the rollout budget when none is set.
const DefaultMaxUnavailable = 1

// Input is everything the planner decides from.
type Input struct {
	// Deployment is the WorkloadDeployment's name; slot k is created as
	// `<Deployment>-<k>`.
	Deployment string
	// Replicas is the desired number of Instances.
	Replicas int32
	// Policy is OrderedReady (the default when empty) or Parallel.
	Policy computev1alpha.InstanceManagementPolicyType
	// MaxUnavailable bounds how many desired slots a rollout may take down
	// at once; DefaultMaxUnavailable when not positive.
	MaxUnavailable int32
	// TemplateHash is the hash of the desired instance template.
	TemplateHash string
	// Labels are the linking labels every Instance must carry, without the
	// instance-index label (the planner adds it per slot).
	Labels map[string]string
	// Instances are the Instances the deployment owns, in any order.
	Instances []Instance
}

// ordered reports whether the policy is OrderedReady, the default.
func (in Input) ordered() bool {
	return in.Policy != computev1alpha.ParallelInstanceManagementPolicy
}

// maxUnavailable returns the rollout budget.
func (in Input) maxUnavailable() int {
	if in.MaxUnavailable <= 0 {
		return DefaultMaxUnavailable
	}
	return int(in.MaxUnavailable)
}

// Action is what an intent asks the controller to do.
type Action string

// Actions.
const (
	// ActionPatchLabels sets labels on an Instance with a metadata-only
	// patch, keeping every other label.
	ActionPatchLabels Action = "PatchLabels"
	// ActionDelete deletes an Instance.
	ActionDelete Action = "Delete"
	// ActionCreate creates the Instance of a slot from the desired template.
	ActionCreate Action = "Create"
)

// Intent is one step for the controller to apply.
type Intent struct {
	// Action to take.
	Action Action
	// Name of the Instance to patch, delete or create.
	Name string
	// Ordinal of the Instance's slot; -1 for a stray without one.
	Ordinal int
	// Reason an Instance is deleted (ActionDelete only).
	Reason Reason
	// Labels to set: the missing or wrong linking labels (ActionPatchLabels)
	// or every linking label including instance-index (ActionCreate).
	Labels map[string]string
}

// String renders an intent on one line, labels sorted: the form the golden
// tests compare.
func (i Intent) String() string {
	switch i.Action {
	case ActionDelete:
		return fmt.Sprintf("delete %s (%s)", i.Name, i.Reason)
	case ActionCreate:
		return fmt.Sprintf("create %s", i.Name)
	default:
		keys := slices.Sorted(maps.Keys(i.Labels))
		pairs := make([]string, 0, len(keys))
		for _, k := range keys {
			pairs = append(pairs, strings.TrimPrefix(k, "compute.datumapis.com/")+"="+i.Labels[k])
		}
		return fmt.Sprintf("label %s %s", i.Name, strings.Join(pairs, ","))
	}
}

// Plan is the planner's answer.
type Plan struct {
	// Intents in the order to apply them: label patches, then deletes
	// (strays before outdated Instances), then creates in ascending
	// ordinal.
	Intents []Intent
	// Waiting says what the plan waits for before it can go further
	// ("instance web-1 to be Ready"); empty when it does not wait.
	Waiting string
	// Assessment is how the planner sorted the Instances, for status.
	Assessment Assessment
}

// Lines renders the plan, one intent per line, then the wait if any.
func (p Plan) Lines() []string {
	out := make([]string, 0, len(p.Intents)+1)
	for _, i := range p.Intents {
		out = append(out, i.String())
	}
	if p.Waiting != "" {
		out = append(out, "wait for "+p.Waiting)
	}
	return out
}

// Count returns the number of intents with action a.
func (p Plan) Count(a Action) int {
	n := 0
	for _, i := range p.Intents {
		if i.Action == a {
			n++
		}
	}
	return n
}

// Compute returns the next step of instance control for in.
func Compute(in Input) Plan {
	a := Assess(in)
	p := &planner{in: in, a: a, plan: Plan{Assessment: a}}
	p.backfillLabels()
	if !p.removeStrays() {
		return p.plan
	}
	p.create()
	if len(a.Strays) > 0 {
		// Strays first: a rollout counts availability over the slots, which
		// only means something once the strays are gone.
		p.wait(fmt.Sprintf("%d stray instance(s) to be removed", len(a.Strays)))
		return p.plan
	}
	p.roll()
	return p.plan
}

// planner accumulates one plan.
type planner struct {
	in   Input
	a    Assessment
	plan Plan
}

// add appends an intent.
func (p *planner) add(i Intent) {
	p.plan.Intents = append(p.plan.Intents, i)
}

// wait records the first thing the plan waits for.
func (p *planner) wait(what string) {
	if p.plan.Waiting == "" {
		p.plan.Waiting = what
	}
}

// slotLabels returns the linking labels of slot k.
func (p *planner) slotLabels(k int) map[string]string {
	l := make(map[string]string, len(p.in.Labels)+1)
	maps.Copy(l, p.in.Labels)
	l[computev1alpha.InstanceIndexLabel] = strconv.Itoa(k)
	return l
}

// backfillLabels patches the linking labels a surviving Instance lacks.
func (p *planner) backfillLabels() {
	for _, s := range p.a.Slots {
		if s.Instance.Deleting {
			continue
		}
		missing := map[string]string{}
		for k, v := range p.slotLabels(s.Ordinal) {
			if got, ok := s.Instance.Labels[k]; !ok || got != v {
				missing[k] = v
			}
		}
		if len(missing) > 0 {
			p.add(Intent{Action: ActionPatchLabels, Name: s.Instance.Name, Ordinal: s.Ordinal, Labels: missing})
		}
	}
}

// removeStrays deletes strays: every one without a usable place at once;
// out-of-range ones at once under Parallel, the highest first and one at a
// time under OrderedReady. It returns false when the plan must stop here.
func (p *planner) removeStrays() bool {
	scalingDown := false
	for _, s := range p.a.Strays {
		if s.Reason == ReasonOrdinalOutOfRange && p.in.ordered() {
			if !scalingDown && !s.Instance.Deleting {
				p.add(deleteIntent(s.Instance, s.Ordinal, s.Reason))
			}
			if !scalingDown {
				p.wait(fmt.Sprintf("instance %s to be removed", s.Instance.Name))
			}
			scalingDown = true
			continue
		}
		if !s.Instance.Deleting {
			p.add(deleteIntent(s.Instance, s.Ordinal, s.Reason))
		}
	}
	if len(p.a.Strays) > 0 && p.in.ordered() {
		p.wait(fmt.Sprintf("%d stray instance(s) to be removed", len(p.a.Strays)))
		return false
	}
	return true
}

// create fills missing slots: all of them under Parallel; under
// OrderedReady the lowest, once every lower slot is Ready.
func (p *planner) create() {
	for k := range p.a.Replicas {
		inst, ok := p.a.Slot(k)
		if !ok {
			name := names.InstanceName(p.in.Deployment, k)
			if p.a.Taken(name) {
				// A stray still holds the name; it is being removed.
				if p.in.ordered() {
					return
				}
				continue
			}
			p.add(Intent{Action: ActionCreate, Name: name, Ordinal: k, Labels: p.slotLabels(k)})
			if p.in.ordered() {
				return
			}
			continue
		}
		if p.in.ordered() && (inst.Deleting || !inst.Ready) {
			if p.missingAbove(k) {
				p.wait(fmt.Sprintf("instance %s to be Ready", inst.Name))
			}
			return
		}
	}
}

// missingAbove reports whether a desired slot above k has no Instance.
func (p *planner) missingAbove(k int) bool {
	for j := k + 1; j < p.a.Replicas; j++ {
		if _, ok := p.a.Slot(j); !ok {
			return true
		}
	}
	return false
}

// roll replaces outdated Instances, newest ordinal first. A Ready one is
// deleted only while the unavailable desired slots stay within
// maxUnavailable; one that is not Ready costs no availability. Under
// OrderedReady the walk stops at the first Instance it may not take down,
// so updates stay in descending order.
func (p *planner) roll() {
	unavailable := p.a.Unavailable()
	budget := p.in.maxUnavailable()
	for i := len(p.a.Slots) - 1; i >= 0; i-- {
		s := p.a.Slots[i]
		if s.Instance.Deleting || !p.a.Outdated(s.Instance) {
			continue
		}
		switch {
		case !s.Instance.Ready:
			p.add(deleteIntent(s.Instance, s.Ordinal, ReasonOutdatedTemplate))
		case unavailable < budget:
			p.add(deleteIntent(s.Instance, s.Ordinal, ReasonOutdatedTemplate))
			unavailable++
		default:
			p.wait(fmt.Sprintf("%d unavailable instance(s) to be Ready before replacing %s", unavailable, s.Instance.Name))
			if p.in.ordered() {
				return
			}
		}
	}
}

// deleteIntent returns the intent to delete an Instance.
func deleteIntent(i Instance, ordinal int, reason Reason) Intent {
	return Intent{Action: ActionDelete, Name: i.Name, Ordinal: ordinal, Reason: reason}
}
