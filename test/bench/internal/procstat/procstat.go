// Package procstat reads what Linux says about a process and the machine
// (/proc): CPU time, resident and peak memory, the load average. The
// benchmarks print them beside their figures.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the user plus system time a process has used, in the kernel's
// 100 Hz ticks; 0 when it cannot be read (the process is gone, say).
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// RSS is a process's resident memory (VmRSS) in bytes; 0 when unknown.
func RSS(pid int) int64 { return status(pid, "VmRSS:") }

// PeakRSS is a process's peak resident memory (VmHWM) in bytes; 0 when
// unknown.
func PeakRSS(pid int) int64 { return status(pid, "VmHWM:") }

// status reads one kB field of /proc/<pid>/status, in bytes.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// LoadAverage is the machine's 1, 5 and 15 minute load average, or
// "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Load1 is the machine's 1 minute load average, or -1 when it cannot be
// read: the figure a benchmark reports as a metric.
func Load1() float64 {
	f := strings.Fields(LoadAverage())
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
