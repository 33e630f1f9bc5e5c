package cmdutil

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
)

// Live renders progress that changes over time. On a terminal it redraws a
// block of lines in place; in a pipe it writes one line each time the
// progress changes, so logs stay readable.
type Live struct {
	w        io.Writer
	terminal bool
	width    int
	// drawn is the number of lines of the block on screen.
	drawn int
	// last is the last line written to a pipe.
	last string
}

// NewLive returns a Live writing to w; terminal and width describe w.
func NewLive(w io.Writer, terminal bool, width int) *Live {
	return &Live{w: w, terminal: terminal, width: width}
}

// Update shows frame: on a terminal the lines replace the previous
// frame; in a pipe, line (a one-line summary of the same state) is written
// when it differs from the last one written.
func (l *Live) Update(frame []string, line string) {
	if !l.terminal {
		if line != l.last {
			_, _ = fmt.Fprintln(l.w, line)
			l.last = line
		}
		return
	}
	var b strings.Builder
	if l.drawn > 0 {
		// Up to the first line of the previous frame, then clear to the
		// end of the screen.
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", l.drawn)
	}
	for _, s := range frame {
		s = printers.EscapeTerminal(s)
		if l.width > 1 {
			// A wrapped line would break the redraw.
			s = Truncate(s, l.width-1)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(l.w, b.String())
	l.drawn = len(frame)
}
