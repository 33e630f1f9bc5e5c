//go:build linux

package platform

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/citycells/compute/internal/features"
)

// EnvStateDir overrides the default state directory.
const EnvStateDir = "COMPUTE_LOCAL_STATE_DIR"

// DefaultProject is the project started when Config.Projects is empty.
const DefaultProject = "default"

// DefaultCities are the cities that get a cell when Config.Cities is empty.
var DefaultCities = []string{"DFW", "LHR", "SIN"}

// Plane names that are not per project or per city.
const (
	// HubPlane is the federation plane: the Karmada apiserver.
	HubPlane = "hub"
	// projectPlanePrefix and cellPlanePrefix prefix project and cell planes.
	projectPlanePrefix = "project-"
	cellPlanePrefix    = "cell-"
)

// ManagerMode chooses whether the platform runs compute-manager.
type ManagerMode string

const (
	// ManagersAuto builds compute-manager from the repository (or finds it
	// next to the running binary) and runs every role it supports; when no
	// binary can be had, the platform starts without it and says why.
	ManagersAuto ManagerMode = ""
	// ManagersOff runs no compute-manager: Karmada plumbing only.
	ManagersOff ManagerMode = "off"
	// ManagersRequired is ManagersAuto, except that a missing binary fails
	// Up.
	ManagersRequired ManagerMode = "required"
)

// Config describes the platform Up starts.
type Config struct {
	// StateDir holds the state file, kubeconfigs, logs, PKI and etcd data.
	// Empty means DefaultStateDir().
	StateDir string
	// Projects are the project planes to start; empty means
	// [DefaultProject]. Names are DNS labels of at most 40 characters.
	Projects []string
	// Cities are the city codes that get a cell; empty means
	// DefaultCities. Codes are three letters; lower case is accepted.
	Cities []string
	// RepoDir is the compute repository (CRDs, the interpreter,
	// cmd/compute-manager). Empty means the module root above the working
	// directory, then above the running executable.
	RepoDir string
	// Managers chooses whether compute-manager runs.
	Managers ManagerMode
	// Identities chooses whom compute-manager and compute-quota
	// authenticate as; empty means IdentitiesOverlay.
	Identities IdentityMode
	// ManagerBinary is a compute-manager binary to run instead of building
	// one.
	ManagerBinary string
	// QuotaGrant is the default grant compute-quota makes out to each
	// project; zero fields keep compute-quota's defaults.
	QuotaGrant QuotaGrant
	// ProviderDelay, when set, is the simulated provider's provisioning and
	// teardown delay in every cell (compute-manager's
	// --simulated-provider-delay); nil keeps compute-manager's default
	// (2s). Zero makes Instances available as soon as they are ungated.
	ProviderDelay *time.Duration
	// FeatureGates are compute's feature gates for every compute-manager
	// ("NetworkingIntegration=true"), passed as --feature-gates; empty keeps
	// the binaries' defaults. With NetworkingIntegration on, the cells also
	// get the networking.datumapis.com CRDs and run the networking stand-in,
	// each city with an address pool of its own.
	FeatureGates string
	// Replicas is how many processes of each compute-manager role (the
	// management role of every project, the cell role of every city) and
	// of every compute-quota run; zero means 1. With more than one they
	// elect a leader through the Lease the shipped manifests use (in
	// compute-system, under the overlays' leader-election RBAC) and only
	// the leader reconciles, as the high-availability component runs them
	// in a cluster. At most MaxReplicas.
	Replicas int
	// Detach lets the processes outlive the caller (compute-local up);
	// otherwise they die with it, even on a crash (tests).
	Detach bool
	// LinkProxyCommand runs the link proxy (the cities' borders, which
	// `partition` cuts) as a process of its own: the command and its first
	// arguments, e.g. [compute-local link-proxy]. Empty runs it inside the
	// caller, which then must outlive the platform (tests).
	LinkProxyCommand []string
	// RegistryCommand runs the local OCI registry as a process of its own
	// (the command and its first arguments, e.g. [compute-local registry]);
	// empty serves it inside the caller, which then must outlive the
	// platform (tests).
	RegistryCommand []string
	// Nodes are the cities whose cell gets a real node (containerd, runc,
	// CNI, kubelet and kube-scheduler) and runs the Kubernetes runtime
	// provider instead of the simulated one; "all" means every city. Empty
	// means none. A node needs root and containerd, runc and the CNI
	// plugins (make tools installs them).
	Nodes []string
	// NodesUnavailable says why Nodes is empty although real nodes were
	// asked for where possible (--nodes=auto on a machine that cannot run
	// one); Up says so in its progress.
	NodesUnavailable string
	// Log receives live progress lines; nil discards them.
	Log io.Writer
	// Timeout bounds each readiness wait; zero means DefaultTimeout.
	Timeout time.Duration
}

// MaxReplicas bounds Config.Replicas: every replica is a process with
// ports and caches of its own.
const MaxReplicas = 3

// DefaultTimeout bounds each readiness wait of Up.
const DefaultTimeout = 2 * time.Minute

// DefaultStateDir returns $COMPUTE_LOCAL_STATE_DIR, else
// $XDG_STATE_HOME/compute-local, else ~/.local/state/compute-local.
func DefaultStateDir() (string, error) {
	if d := os.Getenv(EnvStateDir); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "compute-local"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a state directory: set %s or pass --state-dir: %w", EnvStateDir, err)
	}
	return filepath.Join(home, ".local", "state", "compute-local"), nil
}

var (
	projectName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	cityCode    = regexp.MustCompile(`^[A-Z]{3}$`)
)

// complete fills defaults and validates; every problem is reported at once.
func (c Config) complete() (Config, error) {
	var errs []error
	if c.StateDir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return c, err
		}
		c.StateDir = d
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return c, fmt.Errorf("invalid state directory %q: %w", c.StateDir, err)
	}
	c.StateDir = abs
	if len(c.Projects) == 0 {
		c.Projects = []string{DefaultProject}
	}
	if len(c.Cities) == 0 {
		c.Cities = slices.Clone(DefaultCities)
	}
	c.Projects, errs = normalizeProjects(c.Projects, errs)
	c.Cities, errs = normalizeCities(c.Cities, errs)
	switch c.Managers {
	case ManagersAuto, ManagersOff, ManagersRequired:
	default:
		errs = append(errs, fmt.Errorf("unknown manager mode %q: use %q, %q or %q (auto)", c.Managers, ManagersOff, ManagersRequired, ""))
	}
	switch c.Identities {
	case "":
		c.Identities = IdentitiesOverlay
	case IdentitiesOverlay, IdentitiesAdmin:
	default:
		errs = append(errs, fmt.Errorf("unknown identity mode %q: use %q (the overlays' ServiceAccounts and RBAC) or %q (admin kubeconfigs, for debugging)", c.Identities, IdentitiesOverlay, IdentitiesAdmin))
	}
	if err := c.QuotaGrant.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ProviderDelay != nil && *c.ProviderDelay < 0 {
		errs = append(errs, fmt.Errorf("invalid simulated provider delay %s: use zero or a positive duration such as 500ms", *c.ProviderDelay))
	}
	if c.FeatureGates != "" {
		if err := features.New().Set(c.FeatureGates); err != nil {
			errs = append(errs, fmt.Errorf("invalid feature gates %q: %w", c.FeatureGates, err))
		}
	}
	switch {
	case c.Replicas == 0:
		c.Replicas = 1
	case c.Replicas < 0 || c.Replicas > MaxReplicas:
		errs = append(errs, fmt.Errorf("invalid replica count %d: run 1 to %d replicas of each compute-manager role and compute-quota", c.Replicas, MaxReplicas))
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Detach && len(c.LinkProxyCommand) == 0 {
		errs = append(errs, errors.New("a detached platform needs a LinkProxyCommand: the link proxy inside this process would die with it and cut every city off"))
	}
	if c.Detach && len(c.Nodes) > 0 && len(c.RegistryCommand) == 0 {
		errs = append(errs, errors.New("a detached platform with nodes needs a RegistryCommand: the registry inside this process would die with it"))
	}
	c.Nodes, errs = normalizeNodes(c.Nodes, c.Cities, errs)
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c, errors.Join(errs...)
}

// leaderElect reports whether compute-manager and compute-quota elect a
// leader: whenever more than one replica of each runs.
func (c Config) leaderElect() bool { return c.Replicas > 1 }

// replicaName is the component name of replica i of a component called
// name: name itself for the first, name.<i> for the others (a dot, which
// no plane or project name has, so a replica never reads as another
// project's or city's component).
func replicaName(name string, i int) string {
	if i == 0 {
		return name
	}
	return fmt.Sprintf("%s.%d", name, i)
}

// networkingIntegration reports whether the NetworkingIntegration gate is
// on in c.FeatureGates (which complete has checked).
func (c Config) networkingIntegration() bool {
	g := features.New()
	return c.FeatureGates != "" && g.Set(c.FeatureGates) == nil && g.Enabled(features.NetworkingIntegration)
}

// networkPool is the networking stand-in's address pool of the i-th city:
// 10.(100+i).0.0/16, distinct per city.
func networkPool(i int) string {
	return fmt.Sprintf("10.%d.0.0/16", 100+i%100)
}

// normalizeEach normalises each of in with norm and keeps, in order, each
// that check accepts and that is not listed twice; what is wrong with the
// others joins errs, a duplicate named as what ("city %q is listed twice").
func normalizeEach(in []string, what string, norm func(string) string, check func(string) error, errs []error) ([]string, []error) {
	var out []string
	for _, v := range in {
		v = norm(v)
		err := check(v)
		switch {
		case err != nil:
			errs = append(errs, err)
		case slices.Contains(out, v):
			errs = append(errs, fmt.Errorf("%s %q is listed twice", what, v))
		default:
			out = append(out, v)
		}
	}
	return out, errs
}

// upperCode writes a city code as codes are written: trimmed, upper case.
func upperCode(c string) string { return strings.ToUpper(strings.TrimSpace(c)) }

// normalizeProjects checks project names and removes duplicates.
func normalizeProjects(in []string, errs []error) ([]string, []error) {
	return normalizeEach(in, "project", strings.TrimSpace, func(p string) error {
		switch {
		case p == "":
			return errors.New("empty project name: use names like team-a")
		case !projectName.MatchString(p) || len(p) > 40:
			return fmt.Errorf("invalid project name %q: use at most 40 lower-case letters, digits and dashes", p)
		}
		return nil
	}, errs)
}

// normalizeNodes expands "all", upper-cases city codes and checks that each
// is one of the platform's cities.
func normalizeNodes(in, cities []string, errs []error) ([]string, []error) {
	if len(in) == 1 && strings.EqualFold(strings.TrimSpace(in[0]), "all") {
		return slices.Clone(cities), errs
	}
	if len(in) == 1 && strings.EqualFold(strings.TrimSpace(in[0]), "none") {
		return nil, errs
	}
	return normalizeEach(in, "node city", upperCode, func(c string) error {
		if !slices.Contains(cities, c) {
			return fmt.Errorf("no city %q for a node: nodes go in the platform's cities (%s), or use all or none", c, strings.Join(cities, ","))
		}
		return nil
	}, errs)
}

// hasNode reports whether city's cell has a real node.
func (c Config) hasNode(city string) bool {
	return slices.Contains(c.Nodes, city)
}

// normalizeCities upper-cases city codes and checks them.
func normalizeCities(in []string, errs []error) ([]string, []error) {
	return normalizeEach(in, "city", upperCode, func(c string) error {
		if !cityCode.MatchString(c) {
			return fmt.Errorf("invalid city code %q: use three letters, like DFW", c)
		}
		return nil
	}, errs)
}

// ProjectPlane returns the plane name of a project: project-<name>.
func ProjectPlane(project string) string {
	return projectPlanePrefix + project
}

// CellPlane returns the plane name of a city's cell: cell-<city in lower
// case>. It is also the name of the city's Karmada Cluster.
func CellPlane(city string) string {
	return cellPlanePrefix + strings.ToLower(city)
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
