//go:build linux

package platform

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress writes live progress lines prefixed with the time since Up
// began: "[  4.2s] karmada-webhook ready (1.1s)". It is also the planes
// package's log writer, so every line of a start reads the same way.
type progress struct {
	mu    sync.Mutex
	out   io.Writer
	began time.Time
}

// newProgress returns a progress writer to out.
func newProgress(out io.Writer, began time.Time) *progress {
	return &progress{out: out, began: began}
}

// Write prefixes every line of b; it is safe for concurrent use.
func (p *progress) Write(b []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
		p.emit(strings.TrimPrefix(line, "planes: "))
	}
	return len(b), nil
}

// linef writes one formatted progress line.
func (p *progress) linef(format string, args ...any) {
	p.emit(fmt.Sprintf(format, args...))
}

// emit writes one line with its elapsed-time prefix.
func (p *progress) emit(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = fmt.Fprintf(p.out, "[%6.1fs] %s\n", time.Since(p.began).Seconds(), line)
}
