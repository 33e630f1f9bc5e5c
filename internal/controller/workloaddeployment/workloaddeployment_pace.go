package workloaddeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// StatusInterval is the least time between two status writes of one
// WorkloadDeployment that only report progress: while a thousand Instances
// come up, their counts change with almost every event, and one write per
// event would cost a write per Instance or more. A status that reaches the
// desired state, changes a condition's status or reason, or observes a new
// generation is written at once.
const StatusInterval = 250 * time.Millisecond

// pace remembers when each WorkloadDeployment's status was last written.
type pace struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// hold returns how long to hold a status write from old to new back, or
// zero to write it now.
func (p *pace) hold(key types.NamespacedName, old, new *computev1alpha.WorkloadDeploymentStatus, now time.Time) time.Duration {
	if !onlyProgress(old, new) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(StatusInterval-now.Sub(last), 0)
}

// wrote records a status write.
func (p *pace) wrote(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[types.NamespacedName]time.Time{}
	}
	p.last[key] = at
}

// forget drops a WorkloadDeployment that is going or gone.
func (p *pace) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// onlyProgress reports whether new differs from old only in the progress
// of the same generation towards a desired state it has not reached: the
// counts, the messages and transition times of conditions whose status and
// reason stay.
func onlyProgress(old, new *computev1alpha.WorkloadDeploymentStatus) bool {
	if old.ObservedGeneration != new.ObservedGeneration || old.TemplateHash != new.TemplateHash ||
		len(old.Conditions) != len(new.Conditions) || new.DesiredReplicas != old.DesiredReplicas {
		return false
	}
	c := new.ReplicaCounts
	if c.Replicas == c.DesiredReplicas && c.UpdatedReplicas == c.DesiredReplicas && c.ReadyReplicas == c.DesiredReplicas {
		return false
	}
	for i := range new.Conditions {
		o, n := old.Conditions[i], new.Conditions[i]
		if o.Type != n.Type || o.Status != n.Status || o.Reason != n.Reason {
			return false
		}
	}
	return true
}
