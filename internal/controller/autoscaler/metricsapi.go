package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
)

// MetricsGroupVersion is the resource metrics API the cell's HPA
// controller reads (metrics-server serves it).
const MetricsGroupVersion = "metrics.k8s.io/v1beta1"

// DefaultRecheckAfter is how long an answer of the metrics API discovery is
// kept, and how soon a deployment waiting for metrics is looked at again.
const DefaultRecheckAfter = 30 * time.Second

// MetricsAPI tells whether the cell serves the resource metrics API.
type MetricsAPI interface {
	// Available reports whether the Pods' resource metrics can be read;
	// an error means it could not tell.
	Available(ctx context.Context) (bool, error)
}

// Discovery is the MetricsAPI of a real cell: it asks the API server's
// discovery whether metrics.k8s.io/v1beta1 serves pods, and keeps the
// answer for TTL.
type Discovery struct {
	// Client is the discovery client of the cell.
	Client discovery.DiscoveryInterface
	// TTL is how long an answer is kept; DefaultRecheckAfter when zero.
	TTL time.Duration
	// Clock measures the TTL; the real clock when nil.
	Clock clock.PassiveClock

	mu        sync.Mutex
	checked   time.Time
	available bool
}

// Available implements MetricsAPI.
func (d *Discovery) Available(_ context.Context) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	ttl := d.TTL
	if ttl <= 0 {
		ttl = DefaultRecheckAfter
	}
	now := d.Clock.Now()
	if !d.checked.IsZero() && now.Sub(d.checked) < ttl {
		return d.available, nil
	}
	available, err := servesPodMetrics(d.Client)
	if err != nil {
		return false, err
	}
	d.checked, d.available = now, available
	return available, nil
}

// servesPodMetrics asks discovery for the metrics API's resources. Not
// found (no such group) and unavailable (an aggregated API whose server is
// down) are answers, not errors.
func servesPodMetrics(c discovery.DiscoveryInterface) (bool, error) {
	list, err := c.ServerResourcesForGroupVersion(MetricsGroupVersion)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsServiceUnavailable(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to discover %s: %w", MetricsGroupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods" }), nil
}
