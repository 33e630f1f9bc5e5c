//go:build linux

package cmd

import (
	"testing"
	"time"
)

func TestProviderDelayFlag(t *testing.T) {
	var got *time.Duration
	f := durationPtr{&got}
	if f.String() != "" {
		t.Errorf("an unset delay prints %q, want empty", f.String())
	}
	if err := f.Set("0s"); err != nil || got == nil || *got != 0 {
		t.Fatalf("Set(0s) = %v, delay %v; want a zero delay that is set", err, got)
	}
	if err := f.Set("750ms"); err != nil || *got != 750*time.Millisecond || f.String() != "750ms" {
		t.Fatalf("Set(750ms) = %v, delay %v (%q)", err, *got, f.String())
	}
	for _, bad := range []string{"-1s", "soon", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) is accepted", bad)
		}
	}
}
