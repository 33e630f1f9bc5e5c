package cellhealth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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
// at Config, so the management plane can tell this cell is heard from —
// but only while the cell's own API server (at Cell) answers its readiness
// check, as kubelet renews its node lease only while it works: a cell
// whose API server hangs (frozen, its etcd frozen, or a network that
// swallows packets) stops vouching for itself, and its city is reported
// stale when the Lease expires, in seconds. It is a manager runnable that
// runs on the leader only: a cell with no elected compute-manager is not
// heard from, and is reported so.
type Heartbeat struct {
	// Config reaches the federation plane.
	Config *rest.Config
	// Cell reaches the cell's own API server.
	Cell *rest.Config
	// Name is the cell's name: its Karmada Cluster name.
	Name string
	// Interval between renewals; DefaultInterval when zero.
	Interval time.Duration
	// Duration a renewal holds; DefaultLeaseDuration when zero.
	Duration time.Duration
	// Clock is the real clock when nil.
	Clock clock.Clock
}

// beat is one running heartbeat.
type beat struct {
	name     string
	seconds  int32
	leases   coordinationclient.LeaseInterface
	cell     rest.Interface
	probe    time.Duration
	clock    clock.Clock
	latest   *coordinationv1.Lease
	lastFail string
}

// Start renews the Lease until ctx ends.
func (h *Heartbeat) Start(ctx context.Context) error {
	b, interval, err := h.start()
	if err != nil {
		return err
	}
	wait.JitterUntilWithContext(ctx, b.once, interval, 0.04, true)
	return nil
}

// start builds the clients of a heartbeat.
func (h *Heartbeat) start() (*beat, time.Duration, error) {
	if h.Config == nil || h.Cell == nil || h.Name == "" {
		return nil, 0, errors.New("cell heartbeat: the federation plane, the cell's API server and the cell's name are required")
	}
	interval, duration := h.Interval, h.Duration
	if interval <= 0 {
		interval = DefaultInterval
	}
	if duration <= 0 {
		duration = DefaultLeaseDuration
	}
	hubCfg := rest.CopyConfig(h.Config)
	// A renewal that hangs (a partition that swallows packets) must give
	// up in time for the next one to try a fresh connection.
	hubCfg.Timeout = interval
	hub, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		return nil, 0, fmt.Errorf("cell heartbeat: %w", err)
	}
	cell, err := kubernetes.NewForConfig(rest.CopyConfig(h.Cell))
	if err != nil {
		return nil, 0, fmt.Errorf("cell heartbeat: %w", err)
	}
	clk := h.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &beat{
		name: h.Name, seconds: int32(math.Ceil(duration.Seconds())),
		leases: hub.CoordinationV1().Leases(Namespace), cell: cell.CoreV1().RESTClient(),
		// Probe and renewal together stay well within the Lease's duration:
		// a working cell never misses a beat on a slow probe.
		probe: interval / 2, clock: clk,
	}, interval, nil
}

// once renews the Lease if the cell's API server answers.
func (b *beat) once(ctx context.Context) {
	log := logf.FromContext(ctx).WithName("cell-heartbeat")
	err := b.cellAnswers(ctx)
	if err == nil {
		err = b.renew(ctx)
	}
	failure := ""
	if err != nil {
		failure = err.Error()
	}
	if failure != b.lastFail {
		if err != nil {
			log.Info("heartbeat not renewed", "cell", b.name, "reason", failure)
		} else {
			log.Info("heartbeat renewed again", "cell", b.name)
		}
		b.lastFail = failure
	}
}

// cellAnswers asks the cell's API server whether it is ready (its etcd
// included), within the probe's timeout.
func (b *beat) cellAnswers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.probe)
	defer cancel()
	if err := b.cell.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("the cell's API server does not answer its readiness check: %w", err)
	}
	return nil
}

// renew writes the Lease's renew time, creating the Lease when missing.
func (b *beat) renew(ctx context.Context) error {
	if b.latest == nil {
		got, err := b.leases.Get(ctx, b.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := b.leases.Create(ctx, b.stamp(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: Namespace}}), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("failed to create the heartbeat Lease: %w", err)
			}
			b.latest = created
			return nil
		case err != nil:
			return fmt.Errorf("failed to read the heartbeat Lease: %w", err)
		}
		b.latest = got
	}
	updated, err := b.leases.Update(ctx, b.stamp(b.latest.DeepCopy()), metav1.UpdateOptions{})
	if err != nil {
		// Read it afresh next time (a conflict, or a Lease deleted).
		b.latest = nil
		return fmt.Errorf("failed to renew the heartbeat Lease: %w", err)
	}
	b.latest = updated
	return nil
}

// stamp sets the Lease's holder, duration and renew time.
func (b *beat) stamp(l *coordinationv1.Lease) *coordinationv1.Lease {
	l.Spec.HolderIdentity = ptr.To(b.name)
	l.Spec.LeaseDurationSeconds = ptr.To(b.seconds)
	l.Spec.RenewTime = &metav1.MicroTime{Time: b.clock.Now()}
	return l
}

// NeedLeaderElection makes the heartbeat run on the elected replica only.
func (h *Heartbeat) NeedLeaderElection() bool { return true }
