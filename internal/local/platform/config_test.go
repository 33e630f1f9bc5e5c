//go:build linux

package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigComplete(t *testing.T) {
	cases := map[string]struct {
		in           Config
		wantProjects []string
		wantCities   []string
		wantErr      []string
	}{
		"empty config gets the default project and three cities": {
			in:           Config{StateDir: "/tmp/x"},
			wantProjects: []string{"default"},
			wantCities:   []string{"DFW", "LHR", "SIN"},
		},
		"lower-case city codes are upper-cased": {
			in:           Config{StateDir: "/tmp/x", Cities: []string{"dfw", " Lhr "}},
			wantProjects: []string{"default"},
			wantCities:   []string{"DFW", "LHR"},
		},
		"every bad project and city is reported at once": {
			in: Config{StateDir: "/tmp/x", Projects: []string{"Team_A", "b", "b"}, Cities: []string{"DALLAS", "DFW", "dfw"}},
			wantErr: []string{
				`invalid project name "Team_A"`, `project "b" is listed twice`,
				`invalid city code "DALLAS": use three letters`, `city "DFW" is listed twice`,
			},
		},
		"an unknown identity mode names the valid ones": {
			in:      Config{StateDir: "/tmp/x", Identities: "root"},
			wantErr: []string{`unknown identity mode "root": use "overlay"`, `or "admin"`},
		},
		"an unknown manager mode names the valid ones": {
			in:      Config{StateDir: "/tmp/x", Managers: "sometimes"},
			wantErr: []string{`unknown manager mode "sometimes"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.in.complete()
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("want an error")
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantProjects, got.Projects); diff != "" {
				t.Errorf("projects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCities, got.Cities); diff != "" {
				t.Errorf("cities (-want +got):\n%s", diff)
			}
			if got.Timeout != DefaultTimeout || got.Log == nil || got.Identities != IdentitiesOverlay {
				t.Errorf("defaults not filled: timeout %s, log %v, identities %q", got.Timeout, got.Log, got.Identities)
			}
		})
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Run("the environment variable wins", func(t *testing.T) {
		t.Setenv(EnvStateDir, "/srv/compute")
		t.Setenv("XDG_STATE_HOME", "/xdg")
		if got, _ := DefaultStateDir(); got != "/srv/compute" {
			t.Errorf("got %s", got)
		}
	})
	t.Run("then XDG_STATE_HOME", func(t *testing.T) {
		t.Setenv(EnvStateDir, "")
		t.Setenv("XDG_STATE_HOME", "/xdg")
		if got, _ := DefaultStateDir(); got != "/xdg/compute-local" {
			t.Errorf("got %s", got)
		}
	})
	t.Run("then the home directory", func(t *testing.T) {
		t.Setenv(EnvStateDir, "")
		t.Setenv("XDG_STATE_HOME", "")
		t.Setenv("HOME", "/home/dev")
		if got, _ := DefaultStateDir(); got != "/home/dev/.local/state/compute-local" {
			t.Errorf("got %s", got)
		}
	})
}

func TestPlaneNamesAndLists(t *testing.T) {
	if got := ProjectPlane("team-a"); got != "project-team-a" {
		t.Errorf("ProjectPlane = %s", got)
	}
	if got := CellPlane("DFW"); got != "cell-dfw" {
		t.Errorf("CellPlane = %s", got)
	}
	if diff := cmp.Diff([]string{"a", "b"}, SplitList(" a,,b ,")); diff != "" {
		t.Errorf("SplitList (-want +got):\n%s", diff)
	}
	if got := SplitList(""); got != nil {
		t.Errorf("SplitList of nothing = %v", got)
	}
}

// testState is a recorded platform with two projects.
func testState(dir string) *State {
	return &State{
		Version:   stateVersion,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		ReadyAt:   time.Date(2026, 1, 2, 3, 4, 20, 0, time.UTC),
		Dir:       dir,
		Planes: []PlaneRecord{
			{Name: "project-default", Role: RoleProject, Project: "default", URL: "https://127.0.0.1:1", Kubeconfig: dir + "/project-default.kubeconfig"},
			{Name: "project-team-a", Role: RoleProject, Project: "team-a", URL: "https://127.0.0.1:2", Kubeconfig: dir + "/project-team-a.kubeconfig"},
			{Name: "hub", Role: RoleHub, URL: "https://127.0.0.1:3", Kubeconfig: dir + "/hub.kubeconfig"},
			{Name: "cell-dfw", Role: RoleCell, City: "DFW", URL: "https://127.0.0.1:4", Kubeconfig: dir + "/cell-dfw.kubeconfig"},
		},
		Components: []ComponentRecord{{Name: "etcd", PID: 42, Port: 2379, Binary: "/bin/etcd", Log: dir + "/logs/etcd.log", Health: "http://127.0.0.1:2379/health"}},
		Clusters:   []ClusterRecord{{Name: "cell-dfw", City: "DFW"}},
		Skipped:    []SkippedRecord{{Name: "compute-manager-*", Reason: "switched off"}},
	}
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := testState(dir)
	if err := want.write(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if err := removeState(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(dir); err == nil || !strings.Contains(err.Error(), "run `compute-local up`") {
		t.Errorf("a removed state reads as %v", err)
	}
}

func TestReadStateRejectsWhatItCannotUse(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("{not json")
	if _, err := ReadState(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt state: %v", err)
	}
	write(`{"version": 99}`)
	if _, err := ReadState(dir); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("future state: %v", err)
	}
}

func TestStatePlaneLookup(t *testing.T) {
	st := testState("/s")
	for name, want := range map[string]string{
		"hub":             "hub",
		"karmada":         "hub",
		"cell-dfw":        "cell-dfw",
		"dfw":             "cell-dfw",
		"DFW":             "cell-dfw",
		"team-a":          "project-team-a",
		"project-default": "project-default",
	} {
		got, err := st.Plane(name)
		if err != nil || got.Name != want {
			t.Errorf("Plane(%q) = %s, %v; want %s", name, got.Name, err, want)
		}
	}
	if _, err := st.Plane("project"); err == nil || !strings.Contains(err.Error(), "2 projects (default, team-a): name one") {
		t.Errorf("ambiguous project: %v", err)
	}
	if _, err := st.Plane("cell-xyz"); err == nil || !strings.Contains(err.Error(), "choose one of project, project-default") {
		t.Errorf("unknown plane: %v", err)
	}
	single := testState("/s")
	single.Planes = single.Planes[1:]
	if got, err := single.Plane("project"); err != nil || got.Name != "project-team-a" {
		t.Errorf("the only project: %s, %v", got.Name, err)
	}
}

func TestExports(t *testing.T) {
	st := testState("/state dir")
	want := []string{
		"export KUBECONFIG='/state dir/project-default.kubeconfig'",
		"export COMPUTE_LOCAL_STATE_DIR='/state dir'",
		"export COMPUTE_LOCAL_CELL_DFW_KUBECONFIG='/state dir/cell-dfw.kubeconfig'",
		"export COMPUTE_LOCAL_HUB_KUBECONFIG='/state dir/hub.kubeconfig'",
		"export COMPUTE_LOCAL_PROJECT_DEFAULT_KUBECONFIG='/state dir/project-default.kubeconfig'",
		"export COMPUTE_LOCAL_PROJECT_TEAM_A_KUBECONFIG='/state dir/project-team-a.kubeconfig'",
	}
	if diff := cmp.Diff(want, st.Exports()); diff != "" {
		t.Errorf("exports (-want +got):\n%s", diff)
	}
	for in, want := range map[string]string{
		"/plain/path": "/plain/path",
		"it's":        `'it'"'"'s'`,
		"":            "''",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
