package cellhealth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// Namespace holds the cells' heartbeat Leases in the federation plane:
// compute's own namespace there (the hub overlay's).
const Namespace = "compute-system"

// DefaultInterval is how often a cell renews its heartbeat Lease.
const DefaultInterval = 2 * time.Second

// DefaultLeaseDuration is how long a renewal vouches for the cell: three
// missed renewals make it unreachable.
const DefaultLeaseDuration = 3 * DefaultInterval

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=compute-system,resources=leases,verbs=get;create;update

// Heartbeat renews the Lease named Name in Namespace of the federation plane
// at Config, so the management plane can tell this cell is heard from. It
// is a manager runnable that runs on the leader only: a cell with no
// elected compute-manager is not heard from, and is reported so.
type Heartbeat struct {
	// Config reaches the federation plane.
	Config *rest.Config
	// Name is the cell's name: its Karmada Cluster name.
	Name string
	// Interval between renewals; DefaultInterval when zero.
	Interval time.Duration
	// Duration a renewal holds; DefaultLeaseDuration when zero.
	Duration time.Duration
	// Clock is the real clock when nil.
	Clock clock.Clock
}

// Start renews the Lease until ctx ends.
func (h *Heartbeat) Start(ctx context.Context) error {
	if h.Config == nil || h.Name == "" {
		return errors.New("cell heartbeat: the federation plane and the cell's name are required")
	}
	interval, duration := h.Interval, h.Duration
	if interval <= 0 {
		interval = DefaultInterval
	}
	if duration <= 0 {
		duration = DefaultLeaseDuration
	}
	cfg := rest.CopyConfig(h.Config)
	// A renewal that hangs (a partition that swallows packets) must give
	// up in time for the next one to try a fresh connection.
	cfg.Timeout = interval
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cell heartbeat: %w", err)
	}
	clk := h.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	seconds := int32(math.Ceil(duration.Seconds()))
	lease.NewController(clk, cs, h.Name, seconds, nil, interval, h.Name, Namespace, nil).Run(ctx)
	return nil
}

// NeedLeaderElection makes the heartbeat run on the elected replica only.
func (h *Heartbeat) NeedLeaderElection() bool { return true }
