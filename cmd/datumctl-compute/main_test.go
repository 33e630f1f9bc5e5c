package main

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/citycells/compute/internal/cli/cmdutil"
)

func TestTheVersionIsTheStampedOneElseWhatGoRecorded(t *testing.T) {
	const rev = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: rev}}
	for name, tc := range map[string]struct {
		version, commit string
		info            *debug.BuildInfo
		want            cmdutil.BuildInfo
	}{
		"a release binary says what goreleaser stamped": {"v0.3.0", "1a2b3c4", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			cmdutil.BuildInfo{Version: "v0.3.0", Commit: "1a2b3c4"}},
		"go install …@v0.3.0 says the module version": {"dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}},
			cmdutil.BuildInfo{Version: "v0.3.0"}},
		"a go build in the repository says the commit's pseudo-version": {"dev", "",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124031500-1a2b3c4d5e6f+dirty"}, Settings: vcs},
			cmdutil.BuildInfo{Version: "v0.0.0-20261124031500-1a2b3c4d5e6f+dirty", Commit: "1a2b3c4"}},
		"a build that recorded nothing says dev": {"dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			cmdutil.BuildInfo{Version: "dev"}},
		"no build information at all says dev": {"dev", "", nil, cmdutil.BuildInfo{Version: "dev"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, buildInfoFrom(tc.version, tc.commit, tc.info)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
