//go:build linux

package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/citycells/compute/internal/local/faults"
)

// stateFile is the state directory's record of a running platform.
const stateFile = "state.json"

// stateVersion changes when State changes incompatibly.
const stateVersion = 1

// ErrNotRunning means the state directory records no platform.
var ErrNotRunning = errors.New("no local platform is recorded here")

// Plane roles.
const (
	RoleProject = "project"
	RoleHub     = "hub"
	RoleCell    = "cell"
)

// State is what a started platform records in <state dir>/state.json: enough
// to stop it, report on it and reach every plane from another process.
type State struct {
	// Version is the format version of the file.
	Version int `json:"version"`
	// StartedAt is when Up began.
	StartedAt time.Time `json:"startedAt"`
	// ReadyAt is when Up finished; zero while it is still starting.
	ReadyAt time.Time `json:"readyAt,omitzero"`
	// Dir is the state directory.
	Dir string `json:"dir"`
	// Planes are the running planes.
	Planes []PlaneRecord `json:"planes"`
	// Components are the processes, in start order.
	Components []ComponentRecord `json:"components"`
	// Clusters are the Karmada member clusters, one per cell.
	Clusters []ClusterRecord `json:"clusters,omitempty"`
	// Skipped lists components that were not started, and why.
	Skipped []SkippedRecord `json:"skipped,omitempty"`
	// Links are the proxied connections `compute-local partition` cuts.
	Links []faults.LinkRecord `json:"links,omitempty"`
	// FaultControl is the URL of the link proxy's control endpoint.
	FaultControl string `json:"faultControl,omitempty"`
	// Identities is whom compute-manager and compute-quota run as.
	Identities IdentityMode `json:"identities,omitempty"`
	// Registry is the local OCI registry's host:port; empty when none runs.
	Registry string `json:"registry,omitempty"`
	// Nodes are the real nodes of the cells that have one.
	Nodes []NodeRecord `json:"nodes,omitempty"`
	// IdentityTokensExpire is when the ServiceAccount tokens of the
	// overlay identity mode expire, unless they are refreshed before.
	IdentityTokensExpire time.Time `json:"identityTokensExpire,omitzero"`
	// IdentityTokens are the token files of the overlay identity mode's
	// kubeconfigs and where their tokens come from, so they can be minted
	// again.
	IdentityTokens []TokenRecord `json:"identityTokens,omitempty"`
}

// PlaneRecord is one plane of a platform.
type PlaneRecord struct {
	// Name is the plane name: project-<project>, hub or cell-<city>.
	Name string `json:"name"`
	// Role is project, hub or cell.
	Role string `json:"role"`
	// Project is the project of a project plane.
	Project string `json:"project,omitempty"`
	// City is the city code of a cell.
	City string `json:"city,omitempty"`
	// URL is the apiserver's URL.
	URL string `json:"url"`
	// Kubeconfig is the path of the plane's admin kubeconfig.
	Kubeconfig string `json:"kubeconfig"`
}

// ComponentRecord is one process of a platform.
type ComponentRecord struct {
	// Name identifies the component; its log is logs/<Name>.log.
	Name string `json:"name"`
	// Plane is the plane it serves, if any.
	Plane string `json:"plane,omitempty"`
	// PID is its process id; it leads its own process group.
	PID int `json:"pid"`
	// Port is the port it serves on; 0 if none.
	Port int `json:"port,omitempty"`
	// Binary is the executable, as passed to exec (argv[0]); a recorded
	// pid whose argv[0] differs belongs to someone else and is left alone.
	Binary string `json:"binary"`
	// Log is the path of its log file.
	Log string `json:"log"`
	// Health is a URL answering 200 when the component is ready; empty
	// when only liveness can be checked (never reported ready).
	Health string `json:"health,omitempty"`
	// HealthSelfSigned means Health is served over HTTPS with a
	// certificate the component made itself (kube-controller-manager on
	// loopback), so the probe does not verify it.
	HealthSelfSigned bool `json:"healthSelfSigned,omitempty"`
	// Args is the command line, binary first, that `compute-local start`
	// runs again.
	Args []string `json:"args,omitempty"`
	// Stopped means `compute-local stop` stopped it on purpose.
	Stopped bool `json:"stopped,omitempty"`
}

// NodeRecord is a real node of a cell: what `down` must clean up besides
// its processes.
type NodeRecord struct {
	// Name is the Node's name in the cell (node-<city>).
	Name string `json:"name"`
	// City is its city code; the cell plane is cell-<city>.
	City string `json:"city"`
	// Dir holds its containerd, kubelet and CNI state.
	Dir string `json:"dir"`
	// Socket is containerd's socket.
	Socket string `json:"socket"`
	// RuncRoot is runc's state directory for its containers.
	RuncRoot string `json:"runcRoot"`
	// Bridge is its CNI bridge interface.
	Bridge string `json:"bridge"`
	// PodCIDR is the range its Pods' addresses come from, reachable from
	// this machine through the bridge.
	PodCIDR string `json:"podCIDR"`
}

// ClusterRecord is a Karmada member cluster.
type ClusterRecord struct {
	// Name is the Cluster's name (the cell plane's name).
	Name string `json:"name"`
	// City is its city code.
	City string `json:"city"`
}

// SkippedRecord is a component that was not started.
type SkippedRecord struct {
	// Name is the component.
	Name string `json:"name"`
	// Reason says why, and what to do about it.
	Reason string `json:"reason"`
}

// Chosen reports a component left out on purpose (--managers=off), which
// is not a problem.
func (s SkippedRecord) Chosen() bool {
	return strings.HasPrefix(s.Reason, reasonSwitchedOff) || strings.Contains(s.Reason, ": "+reasonSwitchedOff)
}

// ReadState reads the state file of dir; ErrNotRunning when there is none.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (state directory %s): run `compute-local up`", ErrNotRunning, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read the platform state: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the platform state %s is corrupt (%w): stop leftover processes with `compute-local down` after fixing or removing it",
			filepath.Join(dir, stateFile), err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("the platform state %s has version %d, this compute-local understands %d: use the compute-local that started it to stop it",
			filepath.Join(dir, stateFile), s.Version, stateVersion)
	}
	return &s, nil
}

// write saves the state atomically.
func (s *State) write() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode the platform state: %w", err)
	}
	path := filepath.Join(s.Dir, stateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("failed to write the platform state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to write the platform state: %w", err)
	}
	return nil
}

// removeState deletes the state file of dir.
func removeState(dir string) error {
	err := os.Remove(filepath.Join(dir, stateFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to remove the platform state: %w", err)
	}
	return nil
}

// Plane finds a plane by any of the names a user may type: the plane name
// (project-default, hub, cell-dfw), "project" when there is one project, a
// project name, "karmada" or "federation" for the hub, and a city code in
// either case (dfw, DFW).
func (s *State) Plane(name string) (PlaneRecord, error) {
	want := strings.TrimSpace(name)
	lower := strings.ToLower(want)
	var projects []PlaneRecord
	for _, p := range s.Planes {
		if p.Role == RoleProject {
			projects = append(projects, p)
		}
	}
	for _, p := range s.Planes {
		switch {
		case p.Name == lower,
			p.Role == RoleProject && p.Project == lower,
			p.Role == RoleHub && (lower == "karmada" || lower == "federation"),
			p.Role == RoleCell && strings.EqualFold(p.City, want):
			return p, nil
		}
	}
	if lower == RoleProject {
		if len(projects) == 1 {
			return projects[0], nil
		}
		names := make([]string, 0, len(projects))
		for _, p := range projects {
			names = append(names, p.Project)
		}
		return PlaneRecord{}, fmt.Errorf("there are %d projects (%s): name one", len(projects), strings.Join(names, ", "))
	}
	return PlaneRecord{}, fmt.Errorf("no plane %q: choose one of %s", name, strings.Join(s.planeNames(), ", "))
}

// planeNames lists the names Plane accepts first, for error messages.
func (s *State) planeNames() []string {
	names := make([]string, 0, len(s.Planes)+1)
	if slices.ContainsFunc(s.Planes, func(p PlaneRecord) bool { return p.Role == RoleProject }) {
		names = append(names, RoleProject)
	}
	for _, p := range s.Planes {
		names = append(names, p.Name)
	}
	return names
}

// DefaultPlane is the plane users talk to: the first project.
func (s *State) DefaultPlane() (PlaneRecord, bool) {
	for _, p := range s.Planes {
		if p.Role == RoleProject {
			return p, true
		}
	}
	return PlaneRecord{}, false
}

// IdentitiesDir is where the overlay identity mode's kubeconfigs are.
func (s State) IdentitiesDir() string {
	return filepath.Join(s.Dir, identitiesDir)
}

// envVar is the name of the environment variable Exports gives a plane:
// COMPUTE_LOCAL_<PLANE>_KUBECONFIG, e.g. COMPUTE_LOCAL_CELL_DFW_KUBECONFIG.
func envVar(plane string) string {
	return "COMPUTE_LOCAL_" + strings.ToUpper(strings.ReplaceAll(plane, "-", "_")) + "_KUBECONFIG"
}

// Exports returns shell export lines: KUBECONFIG for the first project, the
// state directory, and one variable per plane, sorted after KUBECONFIG.
func (s *State) Exports() []string {
	var out []string
	if p, ok := s.DefaultPlane(); ok {
		out = append(out, "export KUBECONFIG="+ShellQuote(p.Kubeconfig))
	}
	out = append(out, "export "+EnvStateDir+"="+ShellQuote(s.Dir))
	if s.Registry != "" {
		out = append(out, "export "+EnvRegistry+"="+ShellQuote(s.Registry))
	}
	planes := make([]string, 0, len(s.Planes))
	for _, p := range s.Planes {
		planes = append(planes, "export "+envVar(p.Name)+"="+ShellQuote(p.Kubeconfig))
	}
	sort.Strings(planes)
	return append(out, planes...)
}

// EnvRegistry is the variable `compute-local env` sets to the local
// registry's host:port.
const EnvRegistry = "COMPUTE_REGISTRY"

// ShellQuote quotes s for POSIX shells, as Exports and the commands
// compute-local prints do.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// QuotaCondition says, for a benchmark's or report's conditions line,
// whether compute-quota runs: "quota on (compute-quota)", or "quota off"
// with the reason it was not started (a compute-manager binary given
// without compute-quota beside it, say).
func (s State) QuotaCondition() string {
	for _, c := range s.Components {
		if strings.HasPrefix(c.Name, componentQuotaPrefix) {
			return "quota on (compute-quota)"
		}
	}
	for _, sk := range s.Skipped {
		if strings.HasPrefix(sk.Name, componentQuotaPrefix) {
			return fmt.Sprintf("quota off (%s not started: %s)", sk.Name, sk.Reason)
		}
	}
	return "quota off (compute-quota not started)"
}

// lockDir takes an exclusive lock on the state directory: Up holds it while
// it starts, so two `up`s never race in one directory (without wait, the
// second fails at once), and the fault controls hold it while they change
// the state (with wait, they queue behind each other and behind Up).
func lockDir(dir string, wait bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to lock the state directory: %w", err)
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		if !wait {
			return nil, fmt.Errorf("another compute-local is starting a platform in %s: wait for it, or run `compute-local status`", dir)
		}
		return nil, fmt.Errorf("failed to lock the state directory: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
