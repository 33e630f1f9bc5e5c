package workloaddeployment

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/citycells/compute/internal/ownwrites"
)

// memory is everything the reconciler remembers between reconciles, per
// WorkloadDeployment: each piece covers the time until the cache shows
// what the controller did, or holds a write back, so a new process starts
// with an empty memory and still does the right thing (Reconcile's comment
// says what losing each piece costs).
type memory struct {
	// expect holds the creates and deletes the cache does not show yet.
	expect expectations
	// own recognises WorkloadDeployment versions this controller's status
	// patches superseded.
	own ownwrites.Tracker
	// pace holds status changes that only report progress back, so that
	// the ones after them are written together.
	pace pace
	// sizes sets the window in which Instance events are coalesced.
	sizes sizes
}

// forget drops everything remembered of a WorkloadDeployment that is going
// or gone.
func (m *memory) forget(key types.NamespacedName) {
	m.expect.forget(key)
	m.own.Forget(key)
	m.pace.forget(key)
	m.sizes.forget(key)
}
