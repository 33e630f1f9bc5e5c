package workloaddeployment

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/instanceplan"
)

// expectationTTL bounds how long a create or delete the cache has not shown
// yet is assumed to be in flight. Past it, what the cache shows wins.
const expectationTTL = 30 * time.Second

// expectations remember the Instances each WorkloadDeployment created or
// deleted that the cache does not show yet. Without them, a reconcile
// triggered before the cache caught up would create the same Instances
// again (and fail with AlreadyExists) or take down one more Instance than
// the rollout budget allows.
type expectations struct {
	mu   sync.Mutex
	byWD map[types.NamespacedName]*pending
}

// pending is what one WorkloadDeployment waits to see.
type pending struct {
	uid     types.UID
	creates map[string]expectedCreate
	deletes map[types.UID]time.Time
}

// expectedCreate is an Instance created but not seen yet.
type expectedCreate struct {
	instance instanceplan.Instance
	at       time.Time
}

// created records Instances created from intents with template hash.
func (e *expectations) created(wd *computev1alpha.WorkloadDeployment, hash string, intents []instanceplan.Intent, now time.Time) {
	if len(intents) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.of(wd)
	for _, in := range intents {
		p.creates[in.Name] = expectedCreate{
			instance: instanceplan.Instance{Name: in.Name, Labels: maps.Clone(in.Labels), TemplateHash: hash},
			at:       now,
		}
	}
}

// deleted records Instances deleted by UID.
func (e *expectations) deleted(wd *computev1alpha.WorkloadDeployment, uids []types.UID, now time.Time) {
	if len(uids) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.of(wd)
	for _, uid := range uids {
		p.deletes[uid] = now
	}
}

// of returns the pending record of wd; the caller holds the lock.
func (e *expectations) of(wd *computev1alpha.WorkloadDeployment) *pending {
	if e.byWD == nil {
		e.byWD = map[types.NamespacedName]*pending{}
	}
	key := types.NamespacedName{Namespace: wd.Namespace, Name: wd.Name}
	p := e.byWD[key]
	if p == nil || p.uid != wd.UID {
		p = &pending{uid: wd.UID, creates: map[string]expectedCreate{}, deletes: map[types.UID]time.Time{}}
		e.byWD[key] = p
	}
	return p
}

// forget drops everything expected of a WorkloadDeployment that is gone.
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byWD, key)
}

// apply settles the expectations of wd against what the cache shows and
// returns planner input in which the Instances still in flight look as
// they will: created ones present (not Ready), deleted ones terminating.
func (e *expectations) apply(wd *computev1alpha.WorkloadDeployment, in instanceplan.Input, observed []computev1alpha.Instance, now time.Time) instanceplan.Input {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := types.NamespacedName{Namespace: wd.Namespace, Name: wd.Name}
	p := e.byWD[key]
	if p == nil || p.uid != wd.UID {
		delete(e.byWD, key)
		return in
	}
	seenNames := make(map[string]bool, len(observed))
	terminating := make(map[types.UID]bool, len(observed))
	for i := range observed {
		seenNames[observed[i].Name] = true
		terminating[observed[i].UID] = observed[i].DeletionTimestamp != nil
	}
	for name, c := range p.creates {
		if seenNames[name] || now.Sub(c.at) > expectationTTL {
			delete(p.creates, name)
		}
	}
	for uid, at := range p.deletes {
		if gone, present := terminating[uid]; gone || !present || now.Sub(at) > expectationTTL {
			delete(p.deletes, uid)
		}
	}
	if len(p.creates) == 0 && len(p.deletes) == 0 {
		delete(e.byWD, key)
		return in
	}

	out := in
	out.Instances = make([]instanceplan.Instance, 0, len(in.Instances)+len(p.creates))
	uidOf := make(map[string]types.UID, len(observed))
	for i := range observed {
		uidOf[observed[i].Name] = observed[i].UID
	}
	for _, i := range in.Instances {
		if _, deleting := p.deletes[uidOf[i.Name]]; deleting {
			i.Deleting, i.Ready = true, false
		}
		out.Instances = append(out.Instances, i)
	}
	for _, c := range p.creates {
		out.Instances = append(out.Instances, c.instance)
	}
	return out
}

// nextExpiry returns how long until the first expectation of wd lapses
// (a little after, so the reconcile then sees it lapsed), and false when
// nothing is expected.
func (e *expectations) nextExpiry(wd *computev1alpha.WorkloadDeployment, now time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.byWD[types.NamespacedName{Namespace: wd.Namespace, Name: wd.Name}]
	if p == nil || p.uid != wd.UID {
		return 0, false
	}
	var first time.Time
	for _, c := range p.creates {
		if first.IsZero() || c.at.Before(first) {
			first = c.at
		}
	}
	for _, at := range p.deletes {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return max(first.Add(expectationTTL).Sub(now), 0) + expirySlack, true
}

// expirySlack is added to an expiry so the reconcile it causes comes after
// it.
const expirySlack = 100 * time.Millisecond
