//go:build windows

package exec

import (
	"os"
	"time"
)

// resizeEvents ticks whenever the terminal may have changed size: a
// Windows console sends no signal for it, so every half second (an
// unchanged size is not sent again). stop ends it.
func resizeEvents() (events <-chan os.Signal, stop func()) {
	ticks := make(chan os.Signal, 1)
	ticker := time.NewTicker(500 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				select {
				case ticks <- os.Interrupt: // any value: only the tick counts
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return ticks, func() {
		ticker.Stop()
		close(done)
	}
}
