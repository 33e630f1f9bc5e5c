// Package phases runs a reconcile as a list of named phases, the way
// Cluster API's MachineSet controller does: each phase does one thing over
// a shared scope, says whether the reconcile should wait or stop, and its
// error is wrapped with its name. The runner merges what the phases ask
// for, so no Reconcile has to turn errors into results in a switch at its
// end.
package phases

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Result is what a phase asks of the reconcile.
type Result struct {
	// RequeueAfter asks to look again after this long; zero asks nothing.
	RequeueAfter time.Duration
	// Stop ends the reconcile after this phase, without error: the phase
	// waits for an event (an object on its way out, a write of its own
	// coming back) or for RequeueAfter.
	Stop bool
}

// Phase is one named step of a reconcile over scope S.
type Phase[S any] struct {
	// Name says what the phase does; it prefixes the phase's error.
	Name string
	// Run does the step.
	Run func(ctx context.Context, s S) (Result, error)
}

// Run runs phases in order until one fails or stops. It returns the
// merged result (the shortest non-zero RequeueAfter asked for, and whether
// a phase stopped the reconcile), or an empty result and the failing
// phase's error, wrapped with its name.
func Run[S any](ctx context.Context, s S, phases ...Phase[S]) (Result, error) {
	var merged Result
	for _, p := range phases {
		res, err := p.Run(ctx, s)
		merged.RequeueAfter = lowestNonZero(merged.RequeueAfter, res.RequeueAfter)
		if err != nil {
			// The error's backoff is the retry: controller-runtime
			// ignores a result returned with an error.
			return Result{}, fmt.Errorf("%s: %w", p.Name, err)
		}
		if res.Stop {
			merged.Stop = true
			return merged, nil
		}
	}
	return merged, nil
}

// CtrlResult is r as controller-runtime's result.
func (r Result) CtrlResult() ctrl.Result {
	return ctrl.Result{RequeueAfter: r.RequeueAfter}
}

// lowestNonZero returns the shorter of two waits, ignoring zero.
func lowestNonZero(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	default:
		return min(a, b)
	}
}
