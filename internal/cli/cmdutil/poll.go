package cmdutil

import (
	"context"
	"errors"
	"time"
)

// ErrTimeout is returned by PollUntil when its timeout passes first.
var ErrTimeout = errors.New("timed out")

// PollUntil calls step now and then every poll interval until step
// reports done or fails, ctx is cancelled (Ctrl-C: the returned error
// wraps ErrInterrupted) or timeout passes (ErrTimeout). A timeout of zero
// or less means no deadline; every wait of the CLI passes one.
func (f *Factory) PollUntil(ctx context.Context, timeout time.Duration, step func(context.Context) (bool, error)) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := f.Clock.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C()
	}
	tick := f.Clock.NewTicker(f.Poll())
	defer tick.Stop()
	for {
		done, err := step(ctx)
		if err != nil && ctx.Err() != nil {
			// The step failed because Ctrl-C cancelled its request.
			return context.Cause(ctx)
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline:
			return ErrTimeout
		case <-tick.C():
		}
	}
}
