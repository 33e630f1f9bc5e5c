//go:build !windows

package exec

import (
	"os"
	"os/signal"
	"syscall"
)

// resizeEvents ticks whenever the terminal may have changed size: on
// every SIGWINCH. stop ends it.
func resizeEvents() (events <-chan os.Signal, stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	return winch, func() { signal.Stop(winch) }
}
