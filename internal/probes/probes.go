// Package probes is the one definition of health and readiness for the
// controller binaries (compute-manager and compute-quota): /healthz answers
// while the process serves, /readyz only once every informer the manager's
// cache started has synced. A binary that serves admission webhooks adds the
// webhook server's StartedChecker beside it (see internal/manager/management),
// so "ready" means "caches synced and webhooks serving", never merely
// "process alive" — compute-local and a kubelet both wait on it.
package probes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// syncWait bounds how long one /readyz request waits for the caches: a
// probe answers promptly, it does not block until the informers sync.
const syncWait = 500 * time.Millisecond

// Names of the checks, as /readyz?verbose lists them.
const (
	// PingCheck is the liveness check.
	PingCheck = "ping"
	// CacheSyncCheck is the readiness check of the informer caches.
	CacheSyncCheck = "informers-synced"
)

// Add registers the liveness and readiness checks on mgr.
func Add(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck(PingCheck, healthz.Ping); err != nil {
		return fmt.Errorf("failed to add the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck(CacheSyncCheck, CacheSynced(mgr.GetCache())); err != nil {
		return fmt.Errorf("failed to add the readiness check: %w", err)
	}
	return nil
}

// errNotSynced is what /readyz says while the caches are not synced.
var errNotSynced = errors.New("the informer caches have not started or not synced yet")

// CacheSynced is a readiness check that passes once c has started and every
// informer in it has synced. It waits at most syncWait per request.
func CacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		if c == nil {
			return errors.New("no cache")
		}
		ctx, cancel := context.WithTimeout(req.Context(), syncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errNotSynced
		}
		return nil
	}
}
