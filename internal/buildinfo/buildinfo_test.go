package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestResolve(t *testing.T) {
	recorded := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Version: "v0.3.0"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}},
	}
	tests := map[string]struct {
		version, commit string
		info            *debug.BuildInfo
		want            Info
	}{
		"stamped values win over what the toolchain recorded": {
			version: "v1.2.3", commit: "abcdef0", info: recorded,
			want: Info{Version: "v1.2.3", Commit: "abcdef0", GoVersion: "go1.26.0"},
		},
		"an unstamped build takes the module version and VCS revision": {
			version: "dev", info: recorded,
			want: Info{Version: "v0.3.0", Commit: "0123456", GoVersion: "go1.26.0"},
		},
		"a build that recorded nothing says dev and unknown": {
			want: Info{Version: "dev", Commit: Unknown, GoVersion: runtime.Version()},
		},
		"a devel build in a checkout without VCS info keeps dev": {
			version: "dev", info: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: "dev", Commit: Unknown, GoVersion: "go1.26.0"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resolve(tc.version, tc.commit, tc.info)); diff != "" {
				t.Errorf("resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterExportsOneSeries(t *testing.T) {
	Register(Info{Version: "v0.1.0", Commit: "aaaaaaa", GoVersion: "go1.26.0"})
	Register(Info{Version: "v0.2.0", Commit: "bbbbbbb", GoVersion: "go1.26.0"})
	if n := testutil.CollectAndCount(buildInfo, Metric); n != 1 {
		t.Fatalf("%s has %d series, want 1", Metric, n)
	}
	if v := testutil.ToFloat64(buildInfo.WithLabelValues("v0.2.0", "bbbbbbb", "go1.26.0")); v != 1 {
		t.Errorf("%s = %v, want 1", Metric, v)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == Metric {
			return
		}
	}
	t.Errorf("%s is not on controller-runtime's registry", Metric)
}
