package instanceplan

import (
	"cmp"
	"slices"
	"strconv"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/names"
)

// Instance is what the planner needs to know about one existing Instance.
type Instance struct {
	// Name of the Instance; unique among the Instances of a deployment.
	Name string
	// Labels of the Instance; the instance-index label gives its slot.
	Labels map[string]string
	// TemplateHash is spec.controller.templateHash: the template the
	// Instance was created from. Empty when unknown.
	TemplateHash string
	// Ready is the Instance's Ready condition.
	Ready bool
	// Deleting is true once the Instance has a deletion timestamp.
	Deleting bool
}

// Reason says why the planner deletes an Instance.
type Reason string

// Reasons for deleting an Instance.
const (
	// ReasonMissingIndex: the Instance has no instance-index label.
	ReasonMissingIndex Reason = "MissingIndex"
	// ReasonInvalidIndex: the instance-index label is not a canonical
	// non-negative integer.
	ReasonInvalidIndex Reason = "InvalidIndex"
	// ReasonDuplicateIndex: another Instance holds the same ordinal and was
	// kept instead.
	ReasonDuplicateIndex Reason = "DuplicateIndex"
	// ReasonOrdinalOutOfRange: the ordinal is at or above the desired
	// replicas (scale down).
	ReasonOrdinalOutOfRange Reason = "OrdinalOutOfRange"
	// ReasonNameConflict: the Instance holds the name another slot must be
	// created with.
	ReasonNameConflict Reason = "NameConflict"
	// ReasonOutdatedTemplate: the Instance runs an old template and is
	// replaced by delete and recreate.
	ReasonOutdatedTemplate Reason = "OutdatedTemplate"
)

// Slot is an Instance that holds a valid ordinal below the desired
// replicas.
type Slot struct {
	// Ordinal of the slot.
	Ordinal int
	// Instance holding it.
	Instance Instance
}

// Stray is an Instance that must go before anything else happens.
type Stray struct {
	// Instance to remove.
	Instance Instance
	// Ordinal from the instance-index label, or -1 when it has none or it
	// is invalid.
	Ordinal int
	// Reason it is a stray.
	Reason Reason
}

// Assessment sorts the existing Instances into slots and strays.
type Assessment struct {
	// Slots hold the Instances that keep their place, in ascending ordinal.
	Slots []Slot
	// Strays are the Instances to remove, in the order to remove them:
	// those without a usable ordinal by name, then out-of-range ones in
	// descending ordinal.
	Strays []Stray
	// TemplateHash is the desired template hash.
	TemplateHash string
	// Replicas is the desired number of slots.
	Replicas int

	// taken holds the name of every existing Instance.
	taken map[string]bool
}

// Taken reports whether an Instance named name exists, in a slot or not.
func (a Assessment) Taken(name string) bool {
	return a.taken[name]
}

// Outdated reports whether an Instance was created from another template.
func (a Assessment) Outdated(i Instance) bool {
	return i.TemplateHash != a.TemplateHash
}

// Slot returns the Instance holding ordinal, if any.
func (a Assessment) Slot(ordinal int) (Instance, bool) {
	i, ok := slices.BinarySearchFunc(a.Slots, ordinal, func(s Slot, o int) int { return cmp.Compare(s.Ordinal, o) })
	if !ok {
		return Instance{}, false
	}
	return a.Slots[i].Instance, true
}

// Unavailable counts the desired slots that are missing, being deleted or
// not Ready.
func (a Assessment) Unavailable() int {
	available := 0
	for _, s := range a.Slots {
		if s.Instance.Ready && !s.Instance.Deleting {
			available++
		}
	}
	return a.Replicas - available
}

// Ordinal parses an instance-index label value: a canonical non-negative
// decimal ("0", "17"; not "-1", "+1", "01" or " 1"), so that two labels
// naming the same slot are always the same string.
func Ordinal(labels map[string]string) (ordinal int, present, valid bool) {
	v, ok := labels[computev1alpha.InstanceIndexLabel]
	if !ok {
		return -1, false, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || strconv.Itoa(n) != v {
		return -1, true, false
	}
	return n, true, true
}

// Assess sorts the Instances of in into slots and strays.
func Assess(in Input) Assessment {
	replicas := max(int(in.Replicas), 0)
	a := Assessment{TemplateHash: in.TemplateHash, Replicas: replicas, taken: make(map[string]bool, len(in.Instances))}
	for _, inst := range in.Instances {
		a.taken[inst.Name] = true
	}

	// Slot names: only the names of wanted slots matter for conflicts.
	slotOfName := make(map[string]int, replicas)
	for k := range replicas {
		slotOfName[names.InstanceName(in.Deployment, k)] = k
	}

	byOrdinal := map[int][]Instance{}
	for _, inst := range in.Instances {
		ordinal, present, valid := Ordinal(inst.Labels)
		switch {
		case !present:
			a.Strays = append(a.Strays, Stray{Instance: inst, Ordinal: -1, Reason: ReasonMissingIndex})
		case !valid:
			a.Strays = append(a.Strays, Stray{Instance: inst, Ordinal: -1, Reason: ReasonInvalidIndex})
		case ordinal >= replicas:
			a.Strays = append(a.Strays, Stray{Instance: inst, Ordinal: ordinal, Reason: ReasonOrdinalOutOfRange})
		default:
			byOrdinal[ordinal] = append(byOrdinal[ordinal], inst)
		}
	}

	for ordinal, insts := range byOrdinal {
		canonical := names.InstanceName(in.Deployment, ordinal)
		slices.SortFunc(insts, func(x, y Instance) int { return compareClaimants(x, y, canonical, in.TemplateHash) })
		keep := insts[0]
		for _, dup := range insts[1:] {
			a.Strays = append(a.Strays, Stray{Instance: dup, Ordinal: ordinal, Reason: ReasonDuplicateIndex})
		}
		if k, taken := slotOfName[keep.Name]; taken && k != ordinal {
			a.Strays = append(a.Strays, Stray{Instance: keep, Ordinal: ordinal, Reason: ReasonNameConflict})
			continue
		}
		a.Slots = append(a.Slots, Slot{Ordinal: ordinal, Instance: keep})
	}

	slices.SortFunc(a.Slots, func(x, y Slot) int { return cmp.Compare(x.Ordinal, y.Ordinal) })
	slices.SortFunc(a.Strays, compareStrays)
	return a
}

// compareClaimants orders Instances claiming the same ordinal, the one to
// keep first: alive before deleting, the slot's own name first, Ready
// first, up to date first, then by name (unique, so the order is strict).
func compareClaimants(x, y Instance, canonical, hash string) int {
	return cmp.Or(
		compareBool(!x.Deleting, !y.Deleting),
		compareBool(x.Name == canonical, y.Name == canonical),
		compareBool(x.Ready, y.Ready),
		compareBool(x.TemplateHash == hash, y.TemplateHash == hash),
		cmp.Compare(x.Name, y.Name),
	)
}

// compareStrays orders strays for removal: those without a usable place
// (no, invalid or duplicate index, name conflict) first by name, then
// out-of-range ones in descending ordinal, ties by name.
func compareStrays(x, y Stray) int {
	xRange, yRange := x.Reason == ReasonOrdinalOutOfRange, y.Reason == ReasonOrdinalOutOfRange
	if c := compareBool(!xRange, !yRange); c != 0 {
		return c
	}
	if xRange {
		if c := cmp.Compare(y.Ordinal, x.Ordinal); c != 0 {
			return c
		}
	}
	return cmp.Compare(x.Instance.Name, y.Instance.Name)
}

// compareBool orders true before false.
func compareBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return -1
	default:
		return 1
	}
}
