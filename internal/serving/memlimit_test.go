package serving

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"536870912\n", 536870912},
		{"max\n", 0},
		{"9223372036854771712", 0}, // cgroup v1 without a limit
		{"0", 0},
		{"\t268435456\n", 268435456},
	} {
		got, err := parseMemoryLimit(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, err := parseMemoryLimit("512Mi"); err == nil {
		t.Error("parseMemoryLimit(\"512Mi\") succeeded, want an error")
	}
}

func TestTheProcessOwnCgroupComesFirst(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("memory/kubepods/pod1/c1/memory.limit_in_bytes", "268435456\n")
	write("system.slice/app.service/memory.max", "536870912\n")
	for _, tc := range []struct {
		self string
		want int64
		file string
	}{
		{"4:memory:/kubepods/pod1/c1\n3:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n", 268435456, "memory/kubepods/pod1/c1/memory.limit_in_bytes"},
		{"0::/system.slice/app.service\n", 536870912, "system.slice/app.service/memory.max"},
		// A container's own namespace: its cgroup is the mount's root.
		{"4:memory:/\n", 0, "memory/memory.limit_in_bytes"},
		// A bind-mounted container cgroup: its path is not under root.
		{"4:memory:/docker/abc\n", 0, "memory/memory.limit_in_bytes"},
	} {
		got, file, err := containerMemoryLimit(root, tc.self)
		if err != nil || got != tc.want || file != filepath.Join(root, tc.file) {
			t.Errorf("self %q: %d from %s (%v), want %d from %s", tc.self, got, file, err, tc.want, tc.file)
		}
	}
}

func TestSetMemoryLimitFromTheContainer(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "memory.max"), []byte("536870912\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := SetMemoryLimit(logr.Discard(), v2), int64(483183820); got != want {
		t.Errorf("cgroup v2 limit 512Mi: set %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != 483183820 {
		t.Errorf("the runtime's limit is %d, want 483183820", got)
	}

	v1 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(v1, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1, "memory", "memory.limit_in_bytes"), []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := SetMemoryLimit(logr.Discard(), v1); got != 241591910 {
		t.Errorf("cgroup v1 limit 256Mi: set %d, want 241591910", got)
	}

	none := t.TempDir()
	if err := os.WriteFile(filepath.Join(none, "memory.max"), []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := SetMemoryLimit(logr.Discard(), none); got != 0 {
		t.Errorf("no limit: set %d, want 0", got)
	}
	if got := SetMemoryLimit(logr.Discard(), t.TempDir()); got != 0 {
		t.Errorf("no cgroup files: set %d, want 0", got)
	}

	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := SetMemoryLimit(logr.Discard(), v2); got != 0 {
		t.Errorf("with GOMEMLIMIT set: set %d, want 0 (the runtime's own)", got)
	}
}
