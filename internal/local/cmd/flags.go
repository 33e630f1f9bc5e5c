//go:build linux

package cmd

import (
	"fmt"
	"time"
)

// durationPtr is a flag whose duration is set only when the flag is given:
// nil means "not given" (the default of whoever reads it), zero is a
// value.
type durationPtr struct{ p **time.Duration }

func (d durationPtr) String() string {
	if d.p == nil || *d.p == nil {
		return ""
	}
	return (*d.p).String()
}

// Set parses a Go duration; negative durations are refused.
func (d durationPtr) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a Go duration such as 0s, 500ms or 2s", s)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: it must not be negative", s)
	}
	*d.p = &v
	return nil
}

func (d durationPtr) Type() string { return "duration" }
