package serving

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime is told it may use: the rest is for what the Go runtime does not
// count (thread stacks outside the heap, the binary's own pages).
const memoryLimitShare = 0.9

// SetMemoryLimit tells the Go runtime to keep its memory under 90 % of the
// container's memory limit (cgroup v2 or v1 under root), unless GOMEMLIMIT
// says otherwise or there is no limit. A manager's live heap grows with
// the objects it caches, and Go lets the heap reach twice the live heap
// before it collects (GOGC=100): near the limit that headroom, not the
// caches, is what gets the container killed. With the limit set, the
// runtime collects more often as it nears the limit instead. It returns
// the limit it set, 0 for none.
func SetMemoryLimit(log logr.Logger, root string) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.V(1).Info("Go memory limit set by GOMEMLIMIT", "GOMEMLIMIT", v)
		return 0
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	limit, file, err := containerMemoryLimit(root, string(self))
	if err != nil {
		log.Info("Cannot read the container's memory limit; the Go runtime's memory is not limited", "error", err.Error())
		return 0
	}
	if limit == 0 {
		return 0
	}
	goLimit := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(goLimit)
	log.Info("Go memory limit set to 90% of the container's memory limit (GOMEMLIMIT overrides it)",
		"containerLimitBytes", limit, "goMemoryLimitBytes", goLimit, "from", file)
	return goLimit
}

// containerMemoryLimit reads the memory limit of this process's cgroup
// under root (/sys/fs/cgroup), self being /proc/self/cgroup: cgroup v2,
// then v1, each at the process's own cgroup path (a process that shares
// the host's cgroup namespace) and at the mount's root (a container's own
// cgroup namespace or bind mount). 0 when it has none (no file, "max", or
// v1's page-rounded maximum).
func containerMemoryLimit(root, self string) (limit int64, file string, err error) {
	var v2, v1 string
	for _, line := range strings.Split(self, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1 = parts[2]
		}
	}
	var candidates []string
	if v2 != "" && v2 != "/" {
		candidates = append(candidates, filepath.Join(root, v2, "memory.max"))
	}
	candidates = append(candidates, filepath.Join(root, "memory.max"))
	if v1 != "" && v1 != "/" {
		candidates = append(candidates, filepath.Join(root, "memory", v1, "memory.limit_in_bytes"))
	}
	candidates = append(candidates, filepath.Join(root, "memory", "memory.limit_in_bytes"))
	for _, path := range candidates {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, path, err
		}
		limit, err := parseMemoryLimit(string(b))
		return limit, path, err
	}
	return 0, "", nil
}

// unlimited is where cgroup v1 limits stop meaning anything (it reports no
// limit as the largest page-aligned int64).
const unlimited = int64(1) << 62

// parseMemoryLimit parses a cgroup memory limit file's content: a number
// of bytes, or "max" for none (returned as 0).
func parseMemoryLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("not a number of bytes or \"max\": " + strconv.Quote(s))
	}
	if n <= 0 || n >= unlimited {
		return 0, nil
	}
	return n, nil
}
