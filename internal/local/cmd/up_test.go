//go:build linux

package cmd

import (
	"strings"
	"testing"

	"github.com/citycells/compute/internal/local/platform"
)

func TestAutoNodesGoToDFWOrTheFirstCity(t *testing.T) {
	if got := autoNodeCity([]string{"LHR", "DFW"}); got != "DFW" {
		t.Errorf("autoNodeCity prefers DFW, got %s", got)
	}
	if got := autoNodeCity([]string{"LHR", "SIN"}); got != "LHR" {
		t.Errorf("autoNodeCity without DFW takes the first city, got %s", got)
	}
}

func TestUpEndsWithAWarningBlockNamingWhatWasSkipped(t *testing.T) {
	var b strings.Builder
	printSkippedWarning(&b, []platform.SkippedRecord{
		{Name: "compute-manager-*", Reason: "go build ./cmd/compute-manager failed (exit status 1): fix the build\nmore"},
		{Name: "compute-quota-*", Reason: "it serves compute-manager's cells, which do not run: switched off (--managers=off)"},
	})
	got := b.String()
	for _, want := range []string{"WARNING", "WITHOUT 1 component", "compute-manager-*: go build ./cmd/compute-manager failed (exit status 1): fix the build\n", "compute-local status"} {
		if !strings.Contains(got, want) {
			t.Errorf("warning block lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "compute-quota-*") {
		t.Errorf("a component switched off on purpose is no warning:\n%s", got)
	}
	b.Reset()
	printSkippedWarning(&b, nil)
	if b.Len() != 0 {
		t.Errorf("nothing skipped, no warning; got %q", b.String())
	}
}
