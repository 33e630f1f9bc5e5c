package probes

import (
	"context"
	"net/http/httptest"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// syncedCache is a cache whose only behaviour is whether it has synced.
type syncedCache struct {
	cache.Cache
	synced bool
}

// WaitForCacheSync reports the fixed answer, or false once ctx ends.
func (c syncedCache) WaitForCacheSync(ctx context.Context) bool {
	if c.synced {
		return true
	}
	<-ctx.Done()
	return false
}

func TestCacheSyncedIsReadyOnlyOnceTheCachesSynced(t *testing.T) {
	tests := map[string]struct {
		cache   cache.Cache
		wantErr bool
	}{
		"a cache that has synced is ready":         {cache: syncedCache{synced: true}},
		"a cache still syncing is not ready":       {cache: syncedCache{}, wantErr: true},
		"a manager without a cache is never ready": {cache: nil, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := CacheSynced(tc.cache)(httptest.NewRequest("GET", "/readyz", nil))
			if (err != nil) != tc.wantErr {
				t.Fatalf("CacheSynced() = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
