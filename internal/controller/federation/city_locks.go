package federation

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// CityLocks serialises, per hub namespace and city, the two decisions that
// race over a city's PropagationPolicy: the federator ensuring the policy
// and then writing a copy of the city, and the policy controller finding no
// copy of the city and deleting the policy. Without it the controller can
// list between the federator's policy and its copy, and delete a policy a
// new copy is about to use; Karmada then binds the copy to a policy being
// deleted and its status may never be aggregated. Both controllers run in
// one manager (the elected leader), so an in-process lock suffices. The zero
// value is ready to use; share one between the federator and the policy
// controller.
type CityLocks struct {
	mu    sync.Mutex
	locks map[types.NamespacedName]*cityLock
}

// cityLock is one city's lock and the number of its holders and waiters.
type cityLock struct {
	mu    sync.Mutex
	users int
}

// Lock takes the lock of city in hub namespace namespace and returns the
// function that releases it.
func (l *CityLocks) Lock(namespace, city string) (unlock func()) {
	key := types.NamespacedName{Namespace: namespace, Name: city}
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[types.NamespacedName]*cityLock{}
	}
	cl := l.locks[key]
	if cl == nil {
		cl = &cityLock{}
		l.locks[key] = cl
	}
	cl.users++
	l.mu.Unlock()

	cl.mu.Lock()
	return func() {
		cl.mu.Unlock()
		l.mu.Lock()
		if cl.users--; cl.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}
