package procstat

import (
	"os"
	"strings"
	"testing"
)

func TestThisProcessHasMemoryAndTheMachineALoad(t *testing.T) {
	pid := os.Getpid()
	sink := make([]byte, 8<<20)
	for i := range sink {
		sink[i] = byte(i)
	}
	rss := RSS(pid)
	if peak := PeakRSS(pid); rss <= 0 || peak < rss {
		t.Errorf("RSS = %d, then peak = %d: want a positive RSS and a peak at least as large", rss, peak)
	}
	if CPU(pid) < 0 {
		t.Errorf("CPU = %s", CPU(pid))
	}
	if la := LoadAverage(); len(strings.Fields(la)) != 3 {
		t.Errorf("load average = %q, want three figures", la)
	}
	if l := Load1(); l < 0 {
		t.Errorf("Load1 = %v, want the first figure of %q", l, LoadAverage())
	}
	if RSS(-1) != 0 || CPU(-1) != 0 {
		t.Error("a process that does not exist must read as 0")
	}
}
