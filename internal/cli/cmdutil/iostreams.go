package cmdutil

import (
	"os"

	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// IOStreams are the standard streams of a command plus what the CLI knows
// about them: whether they are terminals, and how wide the output
// terminal is. Commands never touch os.Stdin/os.Stdout directly.
type IOStreams struct {
	genericiooptions.IOStreams

	// InTerminal reports whether In is an interactive terminal: prompts
	// are only shown when it is.
	InTerminal bool
	// OutTerminal reports whether Out is a terminal: tables are fitted to
	// its width and progress redrawn in place only when it is (and TERM is
	// not dumb); a pipe gets complete aligned tables and one line per
	// change.
	OutTerminal bool
	// Width is the width of the output terminal in columns; zero when
	// unknown or not a terminal.
	Width int
}

// SystemIOStreams returns the process's standard streams, detecting
// terminals. Only main calls it.
func SystemIOStreams() IOStreams {
	return FileIOStreams(os.Stdin, os.Stdout, os.Stderr)
}

// FileIOStreams returns streams reading in and writing out and errOut,
// detecting whether each is a terminal. Tests use it with the two ends of
// a pseudo-terminal.
//
// A terminal that says TERM=dumb (an editor's shell buffer, some CI
// consoles) cannot move the cursor: its output is treated as a pipe —
// complete aligned tables, one line per change, no escape sequences.
func FileIOStreams(in, out, errOut *os.File) IOStreams {
	s := IOStreams{
		IOStreams:   genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut},
		InTerminal:  term.IsTerminal(int(in.Fd())),
		OutTerminal: term.IsTerminal(int(out.Fd())) && os.Getenv("TERM") != "dumb",
	}
	if s.OutTerminal {
		if w, _, err := term.GetSize(int(out.Fd())); err == nil {
			s.Width = w
		}
	}
	return s
}
