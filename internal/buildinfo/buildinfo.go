// Package buildinfo says which build of compute is running — the version
// and commit stamped at build time (or, when none was, what the Go
// toolchain recorded in the binary) and the Go version it was built with —
// and exports it as the compute_build_info metric, as Prometheus'
// <program>_build_info convention has it: one series, value 1, whose labels
// are the build.
package buildinfo

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric is the build info series, part of compute's operational contract.
const Metric = "compute_build_info"

// Unknown is the value of a label nothing recorded.
const Unknown = "unknown"

// Info is a build of compute.
type Info struct {
	// Version is the release version (git describe), "dev" when the build
	// stamped none and the toolchain recorded none.
	Version string
	// Commit is the short commit hash; Unknown when not recorded.
	Commit string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Resolve returns the build of the running binary: version and commit as
// stamped with -ldflags (-X main.version=… -X main.commit=…, as `make build`
// does), completed from what the toolchain recorded: the module version of
// a `go install …@version`, the VCS revision of a build in a checkout.
func Resolve(version, commit string) Info {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return resolve(version, commit, info)
}

// resolve is Resolve over what the toolchain recorded (nil when nothing).
func resolve(version, commit string, info *debug.BuildInfo) Info {
	b := Info{Version: cmp.Or(version, "dev"), Commit: commit, GoVersion: runtime.Version()}
	if info != nil {
		if v := info.Main.Version; b.Version == "dev" && v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && b.Commit == "" && len(s.Value) >= 7 {
				b.Commit = s.Value[:7]
			}
		}
		b.GoVersion = cmp.Or(info.GoVersion, b.GoVersion)
	}
	b.Commit = cmp.Or(b.Commit, Unknown)
	return b
}

var (
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: Metric,
		Help: "The build of compute that serves these metrics: always 1, labelled with its version, commit and Go version.",
	}, []string{"version", "commit", "goversion"})
	registerOnce sync.Once
)

// Register exports b as compute_build_info on controller-runtime's registry
// (what every compute manager serves on /metrics). Registering again
// replaces the series.
func Register(b Info) {
	registerOnce.Do(func() { metrics.Registry.MustRegister(buildInfo) })
	buildInfo.Reset()
	buildInfo.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
}
