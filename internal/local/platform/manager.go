//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/citycells/compute/internal/planes"
)

// managerBinaryName is compute-manager's executable name.
const managerBinaryName = "compute-manager"

// buildNiceness is the scheduling niceness of the compute-manager build.
const buildNiceness = 15

// managerFlags are the flags a compute-manager binary accepts, read from its
// --help, so the platform runs whichever roles the binary has.
type managerFlags map[string]bool

// flagPattern finds long flags in help output.
var flagPattern = regexp.MustCompile(`(?m)--([a-z0-9][a-z0-9-]*)`)

// parseManagerFlags collects the long flags mentioned in help output.
func parseManagerFlags(help string) managerFlags {
	flags := managerFlags{}
	for _, m := range flagPattern.FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	return flags
}

// Role flags of compute-manager.
const (
	flagManagement        = "enable-management-controllers"
	flagCell              = "enable-cell-controllers"
	flagSimulatedProvider = "enable-simulated-provider"
	// flagRuntimeProvider chooses the cell's runtime provider.
	flagRuntimeProvider = "runtime-provider"
	// flagAllocationRatio is the Kubernetes provider's allocation ratio.
	flagAllocationRatio = "runtime-allocation-ratio"
	// flagSimulatedNetworking runs the networking stand-in.
	flagSimulatedNetworking = "enable-simulated-networking"
	// flagSimulatedProviderDelay is the simulated provider's delay.
	flagSimulatedProviderDelay = "simulated-provider-delay"
	flagFederation             = "federation-kubeconfig"
	flagWebhookCertDir         = "webhook-cert-dir"
)

// managerRole is one compute-manager process of the platform.
type managerRole struct {
	// name is the component name: compute-manager-<plane>.
	name string
	// plane is the plane it runs against.
	plane string
	// kubeconfig is that plane's kubeconfig.
	kubeconfig string
	// cell selects the cell role (with the simulated provider); otherwise
	// the management role.
	cell bool
	// project is the management role's project: its cluster name.
	project string
	// webhookCertDir and webhookPort configure the management role's
	// admission webhook server; empty when it serves none.
	webhookCertDir string
	// webhookClientCA is the CA the webhook server requires of its callers.
	webhookClientCA string
	webhookPort     int
	// quotaKubeconfig is the cell role's quota kubeconfig; empty runs the
	// cell without quota.
	quotaKubeconfig string
	// location is the cell role's Location as namespace/name.
	location string
	// cityCode is the city the cell role serves: its hub cache holds only
	// that city's objects.
	cityCode string
	// providerDelay is the cell role's --simulated-provider-delay; nil
	// keeps the binary's default.
	providerDelay *time.Duration
	// hubKubeconfig reaches the hub; empty means the hub's own (the cell
	// role reaches it through its city's link).
	hubKubeconfig string
	// featureGates is --feature-gates; empty keeps the binary's defaults.
	featureGates string
	// networkPool, when set, runs the networking stand-in in the cell
	// role with this address pool.
	networkPool string
	// realNode runs the cell role with the Kubernetes runtime provider (its
	// cell has a real node) instead of the simulated one.
	realNode bool
	// replica is which replica of the role this process is (0 first);
	// leaderElect makes the replicas elect a leader.
	replica     int
	leaderElect bool
	// debugAPIPort and debugAPICertDir configure the management role's
	// debug API (its first replica only); zero serves none.
	debugAPIPort    int
	debugAPICertDir string
}

// leaderElectionArgs are the leader election flags of compute-manager and
// compute-quota: with leader election, the Lease goes in compute-system, as
// the shipped manifests put it (--leader-election-namespace=$(POD_NAMESPACE))
// and as the overlays' leader-election Roles allow; its name is the
// binary's default for the role, which the manifests keep too.
func leaderElectionArgs(on bool) map[string]string {
	if !on {
		return map[string]string{"leader-elect": "false"}
	}
	return map[string]string{"leader-elect": "true", "leader-election-namespace": LeaseNamespace}
}

// managerPorts are one compute-manager's ports.
type managerPorts struct {
	metrics, probe int
}

// managerArgs returns the flags of a compute-manager role, or false when
// the binary lacks the role. Optional flags are passed only when the binary
// has them: the federation kubeconfig (the management role requires it, the
// cell role writes Instances back through it), leader election (on only
// for replicated roles), the
// simulated provider of the cell role, and the management role's project
// cluster name and webhook server (loopback port, certificate directory).
func managerArgs(r managerRole, flags managerFlags, hubKubeconfig string, ports managerPorts) ([]string, bool) {
	role := flagManagement
	if r.cell {
		role = flagCell
	}
	if !flags[role] {
		return nil, false
	}
	args := map[string]string{
		role:                        "true",
		"kubeconfig":                r.kubeconfig,
		"metrics-bind-address":      hostPort(ports.metrics),
		"health-probe-bind-address": hostPort(ports.probe),
	}
	if r.hubKubeconfig != "" {
		hubKubeconfig = r.hubKubeconfig
	}
	optional := map[string]string{flagFederation: hubKubeconfig}
	maps.Copy(optional, leaderElectionArgs(r.leaderElect))
	if r.featureGates != "" {
		optional["feature-gates"] = r.featureGates
	}
	switch {
	case r.cell && r.realNode:
		optional[flagRuntimeProvider] = "kubernetes"
		optional[flagAllocationRatio] = strconv.Itoa(NodeAllocationRatio)
	case r.cell && flags[flagRuntimeProvider]:
		optional[flagRuntimeProvider] = "simulated"
	case r.cell:
		// A compute-manager from before --runtime-provider.
		optional[flagSimulatedProvider] = "true"
	}
	if r.cell {
		// The cell's name is its Karmada Cluster's: its heartbeat Lease in
		// the hub and the source of its quota claims.
		optional[flagCellName] = r.plane
		if r.location != "" {
			optional["cell-location"] = r.location
		}
		if r.cityCode != "" {
			optional["cell-city-code"] = r.cityCode
		}
		if r.providerDelay != nil {
			optional[flagSimulatedProviderDelay] = r.providerDelay.String()
		}
		if r.networkPool != "" {
			optional[flagSimulatedNetworking] = "true"
			optional["simulated-network-cidr"] = r.networkPool
		}
		maps.Copy(optional, quotaManagerArgs(r, flags))
	} else {
		optional["single-project-cluster-name"] = r.project
		if r.webhookCertDir != "" {
			optional[flagWebhookCertDir] = r.webhookCertDir
			optional["webhook-port"] = strconv.Itoa(r.webhookPort)
			optional["webhook-host"] = "127.0.0.1"
			optional[flagWebhookClientCAFile] = r.webhookClientCA
		}
		maps.Copy(optional, debugAPIArgs(r))
	}
	for k, v := range optional {
		if flags[k] {
			args[k] = v
		}
	}
	return planes.FlagList(args), true
}

// reasonSwitchedOff is why components are skipped with --managers=off: a
// choice, not a problem.
const reasonSwitchedOff = "switched off (--managers=off)"

// managerResult is the outcome of finding or building compute-manager.
type managerResult struct {
	binary string
	// skip explains why no binary is available (ManagersAuto only).
	skip string
	err  error
}

// findManager resolves compute-manager in the background: Config's binary,
// else a build from the repository into <state>/bin, else the binary next to
// the running executable. The build runs while the planes start.
func (p *Platform) findManager(ctx context.Context) <-chan managerResult {
	out := make(chan managerResult, 1)
	if p.cfg.Managers == ManagersOff {
		out <- managerResult{skip: reasonSwitchedOff}
		return out
	}
	go func() {
		res := p.resolveManager(ctx)
		if res.skip != "" && p.cfg.Managers == ManagersRequired {
			res = managerResult{err: errors.New("compute-manager is required but " + res.skip)}
		}
		out <- res
	}()
	return out
}

// resolveManager does the work of findManager.
func (p *Platform) resolveManager(ctx context.Context) managerResult {
	if p.cfg.ManagerBinary != "" {
		if _, err := os.Stat(p.cfg.ManagerBinary); err != nil {
			return managerResult{err: fmt.Errorf("compute-manager binary %s: %w", p.cfg.ManagerBinary, err)}
		}
		return managerResult{binary: p.cfg.ManagerBinary}
	}
	if _, err := os.Stat(filepath.Join(p.repo, "cmd", managerBinaryName, "main.go")); err == nil {
		return p.buildManager(ctx)
	}
	if exe, err := os.Executable(); err == nil {
		candidate := filepath.Join(filepath.Dir(exe), managerBinaryName)
		if _, err := os.Stat(candidate); err == nil {
			return managerResult{binary: candidate}
		}
	}
	return managerResult{skip: "no cmd/compute-manager in " + p.repo + " and no compute-manager next to this binary"}
}

// buildManager runs go build for compute-manager into <state>/bin; its
// output goes to logs/compute-manager-build.log.
func (p *Platform) buildManager(ctx context.Context) managerResult {
	began := time.Now()
	bin := filepath.Join(p.cfg.StateDir, "bin", managerBinaryName)
	logPath := p.logPath("compute-manager-build")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return managerResult{err: err}
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return managerResult{err: fmt.Errorf("failed to create %s: %w", logPath, err)}
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.CommandContext(ctx, "go", buildArgs(p.repo, bin)...)
	cmd.Dir = p.repo
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	if err == nil {
		// The build overlaps the planes' start on a machine with few cores:
		// let the apiservers have the CPU first. The compiler and linker
		// the go command forks inherit the niceness.
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, buildNiceness)
		err = cmd.Wait()
	}
	if err != nil {
		reason := fmt.Sprintf("go build ./cmd/compute-manager failed (%v): fix the build, or run with --managers=off; see %s", err, logPath)
		tail := tailLines(logPath, 15)
		if p.cfg.Managers == ManagersRequired {
			return managerResult{err: fmt.Errorf("%s:\n%s", reason, tail)}
		}
		p.progress.linef("go build ./cmd/compute-manager failed; last lines of %s:\n%s", logPath, tail)
		return managerResult{skip: reason}
	}
	p.progress.linef("built %s (%s)", bin, since(began))
	return managerResult{binary: bin}
}

// startManagers starts compute-manager in the management role for every
// project and in the cell role for every city, concurrently, when the binary
// has those roles; roles it lacks are recorded as skipped.
func (p *Platform) startManagers(ctx context.Context, found <-chan managerResult) error {
	var res managerResult
	select {
	case res = <-found:
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.err != nil {
		return res.err
	}
	if res.binary == "" {
		p.skip(componentManagerPrefix+"*", res.skip)
		p.skip(componentQuotaPrefix+"*", "it serves compute-manager's cells, which do not run: "+res.skip)
		return nil
	}
	quotaRuns, err := p.startQuota(ctx, res.binary)
	if err != nil {
		return err
	}
	helpOut, _ := exec.CommandContext(ctx, res.binary, "--help").CombinedOutput()
	flags := parseManagerFlags(string(helpOut))
	if err := p.ensureLeaseNamespaces(ctx); err != nil {
		return err
	}
	replicas := p.cfg.Replicas
	// Three ports a process: metrics, probe and (management) webhook server.
	free, err := planes.FreePorts(3 * replicas * (len(p.cfg.Projects) + len(p.cfg.Cities)))
	if err != nil {
		return err
	}
	roles := make([]managerRole, 0, replicas*(len(p.cfg.Projects)+len(p.cfg.Cities)))
	for _, project := range p.cfg.Projects {
		for k := range replicas {
			webhookPort := free[3*len(roles)+2]
			if front, ok := p.webhookFronts[ProjectPlane(project)]; ok {
				webhookPort = front.replicas[k]
			}
			r, err := p.managementRole(project, k, servesWebhooks(flags), webhookPort)
			if err != nil {
				return err
			}
			if err := p.withDebugAPI(&r, flags); err != nil {
				return err
			}
			roles = append(roles, r)
		}
	}
	for _, city := range p.cfg.Cities {
		for k := range replicas {
			roles = append(roles, p.cellRole(city, k, quotaRuns))
		}
	}
	began := time.Now()
	if err := p.runManagerRoles(ctx, res.binary, flags, roles, free); err != nil {
		return err
	}
	p.timing("compute-manager roles", began)
	return nil
}

// managementRole is replica k of the management role of project; with
// webhooks, its admission webhook server listens on webhookPort with a
// certificate of the platform CA, which the replicas share.
func (p *Platform) managementRole(project string, k int, webhooks bool, webhookPort int) (managerRole, error) {
	plane := ProjectPlane(project)
	base := componentManagerPrefix + plane
	r := managerRole{name: replicaName(base, k), plane: plane, kubeconfig: p.env.Plane(plane).KubeconfigPath(), project: project,
		featureGates: p.cfg.FeatureGates, replica: k, leaderElect: p.cfg.leaderElect()}
	if webhooks {
		r.webhookPort, r.webhookClientCA = webhookPort, p.webhookClientCA
		r.webhookCertDir = filepath.Join(p.cfg.StateDir, "managers", base, "webhook-certs")
		if k == 0 {
			if _, _, err := p.writeServingCert(r.webhookCertDir, base); err != nil {
				return managerRole{}, err
			}
		}
	}
	p.useIdentity(&r)
	return r, nil
}

// cellRole is replica k of the cell role of city, reaching the hub
// through the city's link and, when compute-quota runs, the projects'
// quota.
func (p *Platform) cellRole(city string, k int, quotaRuns bool) managerRole {
	plane := CellPlane(city)
	r := managerRole{
		name: replicaName(componentManagerPrefix+plane, k), plane: plane, replica: k, leaderElect: p.cfg.leaderElect(), kubeconfig: p.env.Plane(plane).KubeconfigPath(), cell: true,
		hubKubeconfig: p.cellHubKubeconfig(city), location: LocationNamespace + "/" + strings.ToLower(city),
		cityCode:      city,
		providerDelay: p.cfg.ProviderDelay, featureGates: p.cfg.FeatureGates,
		realNode: p.cfg.hasNode(city),
	}
	if p.cfg.networkingIntegration() {
		r.networkPool = networkPool(slices.Index(p.cfg.Cities, city))
	}
	if quotaRuns {
		r.quotaKubeconfig = p.cellQuotaKubeconfig(city)
	}
	p.useIdentity(&r)
	return r
}

// runManagerRoles starts every role of binary concurrently, role i on the
// ports free[3i] (metrics) and free[3i+1] (probe), and registers the
// admission webhooks of the first replica of those that serve them once it
// is ready (pointing at the webhook front of a replicated role, which
// reaches whichever replica answers). A role the binary lacks is recorded
// as skipped.
func (p *Platform) runManagerRoles(ctx context.Context, binary string, flags managerFlags, roles []managerRole, free []int) error {
	hubKubeconfig := p.env.Plane(HubPlane).KubeconfigPath()
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range roles {
		ports := managerPorts{metrics: free[3*i], probe: free[3*i+1]}
		args, ok := managerArgs(r, flags, hubKubeconfig, ports)
		if !ok {
			role := flagManagement
			if r.cell {
				role = flagCell
			}
			p.skip(r.name, fmt.Sprintf("%s has no --%s yet", binary, role))
			continue
		}
		g.Go(func() error {
			err := p.startComponent(gctx, planes.ComponentSpec{
				Name: r.name, Plane: r.plane, Binary: binary, Args: args, Port: ports.probe,
			}, "http://"+hostPort(ports.probe)+"/readyz", false)
			if err != nil || r.replica != 0 {
				return err
			}
			if err := p.registerDebugAPI(gctx, r); err != nil {
				return err
			}
			if r.webhookCertDir == "" {
				return nil
			}
			return p.registerWebhooks(gctx, r)
		})
	}
	return g.Wait()
}

// useIdentity points a role at its overlay identity's kubeconfigs, in the
// overlay identity mode: its plane's ServiceAccount and its hub
// ServiceAccount (the cell's through its link).
func (p *Platform) useIdentity(r *managerRole) {
	if p.ids == nil {
		return
	}
	r.kubeconfig = p.ids.manager[r.plane]
	r.hubKubeconfig = p.ids.federation[r.plane]
}

// tailLines returns the last n lines of a file, indented.
func tailLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (cannot read " + path + ": " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// since formats the time elapsed since t.
func since(t time.Time) string {
	return time.Since(t).Round(10 * time.Millisecond).String()
}
