// Package ownwrites lets a controller recognise that its cache has not
// caught up with its own writes yet. After a controller writes an object,
// its informer may still hand it older versions (events of earlier changes
// by anyone, including other controllers writing the same object, arrive
// after the write was made). Deciding again from such a version writes
// again what was just written: wasted requests and, with optimistic
// locking, conflicts. A Tracker remembers the resource version of the
// controller's latest write to each object, so a reconcile reading an
// older version can stop and wait for the event of that write, which is
// certain to come.
//
// Resource versions are compared with
// k8s.io/apimachinery/pkg/util/resourceversion (KEP-5504). A version that
// does not compare (an apiserver that does not promise comparable
// versions) is never taken as stale, so the Tracker then changes nothing.
package ownwrites

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Tracker remembers, per object, the resource version of the controller's
// latest write. The zero value is ready to use.
type Tracker struct {
	mu      sync.Mutex
	objects map[types.NamespacedName]written
}

// written is the latest write to one object.
type written struct {
	uid types.UID
	rv  string
	at  time.Time
}

// Wrote records that a write to the object (uid) produced resource version
// rv.
func (t *Tracker) Wrote(key types.NamespacedName, uid types.UID, rv string) {
	if rv == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.objects == nil {
		t.objects = map[types.NamespacedName]written{}
	}
	if w, ok := t.objects[key]; ok && w.uid == uid {
		if c, err := resourceversion.CompareResourceVersion(rv, w.rv); err == nil && c < 0 {
			return
		}
	}
	t.objects[key] = written{uid: uid, rv: rv, at: time.Now()}
}

// Unseen is for an object the cache does not show: it returns how much of
// ttl is left since the controller's latest write to it, zero when the
// controller has not written it within ttl. A positive answer means the
// cache has not caught up with the controller's own create yet, and the
// event of that create is on its way; ttl bounds the wait for an object
// that went again before the cache saw it (the watch may then bring no
// event at all).
func (t *Tracker) Unseen(key types.NamespacedName, ttl time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.objects[key]
	if !ok {
		return 0
	}
	left := ttl - time.Since(w.at)
	if left <= 0 {
		delete(t.objects, key)
		return 0
	}
	return left
}

// Stale reports whether version rv of the object (uid) is older than the
// controller's latest write to it, so that the event of that write is
// still to come. Once the cache shows that write or a later version, the
// object is forgotten.
func (t *Tracker) Stale(key types.NamespacedName, uid types.UID, rv string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.objects[key]
	if !ok {
		return false
	}
	if w.uid == uid {
		if c, err := resourceversion.CompareResourceVersion(rv, w.rv); err == nil && c < 0 {
			return true
		}
	}
	delete(t.objects, key)
	return false
}

// Forget drops what is known of an object, for one that is gone.
func (t *Tracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.objects, key)
}
