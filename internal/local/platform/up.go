//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"

	"github.com/citycells/compute/internal/local/faults"
	"github.com/citycells/compute/internal/planes"
	"github.com/citycells/compute/internal/toolchain"
)

// Platform is a running local platform started by Up.
type Platform struct {
	cfg      Config
	repo     string
	env      *planes.Environment
	prober   *prober
	progress *progress
	tokens   map[string]string // cell plane → bearer token
	// ids are the processes' kubeconfigs in the overlay identity mode; nil
	// in the admin mode.
	ids *identities
	// webhookFronts are the webhook fronts of the replicated management
	// roles, by plane; nil without replicas.
	webhookFronts map[string]webhookFront
	// webhookClientCA is the CA of the client certificate the project
	// planes present to compute's admission webhooks (writeWebhookClients).
	webhookClientCA string
	// kcmPorts are the health ports of the kube-controller-managers, by
	// plane.
	kcmPorts map[string]int
	// linkProxy serves the cities' links when it runs in this process;
	// controlPort is its control endpoint's port.
	linkProxy *faults.Proxy
	// stopRegistry stops the registry when it runs in this process.
	stopRegistry context.CancelFunc
	controlPort  int

	mu      sync.Mutex
	state   *State
	timings []Timing

	downOnce sync.Once
}

// Timing is how long one phase of Up took.
type Timing struct {
	// Phase names the phase.
	Phase string
	// Duration is how long it took.
	Duration time.Duration
}

// AlreadyRunningError is returned by Up when the state directory records a
// platform whose processes are alive.
type AlreadyRunningError struct {
	// State is the running platform's state.
	State *State
	// Alive and Total count its live and recorded components.
	Alive, Total int
}

// Error says what is running and what to do.
func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("the local platform in %s is already running (%d of %d components alive, started %s): "+
		"see `compute-local status`, or run `compute-local down` first to start afresh",
		e.State.Dir, e.Alive, e.Total, e.State.StartedAt.Local().Format(time.DateTime))
}

// Up starts the platform described by cfg and returns once every component
// is ready and every Karmada Cluster is Ready. On failure it stops whatever
// it started and the error names the component, with the tail of its log.
// ctx bounds start-up only.
func Up(ctx context.Context, cfg Config) (*Platform, error) {
	began := time.Now()
	cfg, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create the state directory: %w", err)
	}
	unlock, err := lockDir(cfg.StateDir, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := checkNotRunning(cfg.StateDir); err != nil {
		return nil, err
	}
	repo, err := findRepo(cfg.RepoDir)
	if err != nil {
		return nil, err
	}
	karmada, err := resolveKarmada()
	if err != nil {
		return nil, err
	}
	karmadaCRDs, err := toolchain.KarmadaCRDDir()
	if err != nil {
		return nil, err
	}
	if err := prepareDir(cfg.StateDir); err != nil {
		return nil, err
	}
	p := &Platform{
		cfg:      cfg,
		repo:     repo,
		progress: newProgress(cfg.Log, began),
		tokens:   map[string]string{},
		kcmPorts: map[string]int{},
		state:    &State{Version: stateVersion, StartedAt: began, Dir: cfg.StateDir, Identities: cfg.Identities},
	}
	p.progress.linef("starting the local platform in %s: projects %s, cities %s",
		cfg.StateDir, strings.Join(cfg.Projects, ","), strings.Join(cfg.Cities, ","))
	if err := p.up(ctx, karmada, karmadaCRDs); err != nil {
		p.progress.linef("start failed; stopping what was started")
		p.stop()
		if ctx.Err() != nil {
			// The caller gave up (Ctrl-C, a deadline): the readiness
			// errors it caused are noise.
			return nil, fmt.Errorf("start interrupted (%w); everything started was stopped", context.Cause(ctx))
		}
		return nil, err
	}
	p.state.ReadyAt = time.Now()
	if err := p.saveState(); err != nil {
		p.stop()
		return nil, err
	}
	p.timing("total", began)
	p.progress.linef("platform ready (%s)", since(began))
	return p, nil
}

// phase is one named step of Up.
type phase struct {
	name string
	run  func(context.Context) error
}

// up starts everything, phase by phase; the caller stops the platform on
// error. compute-manager builds in the background meanwhile.
func (p *Platform) up(ctx context.Context, karmada karmadaBinaries, karmadaCRDs string) error {
	managers := p.findManager(ctx)
	phases := []phase{
		{"planes (etcd, apiservers, CRDs, kube-controller-managers)", func(ctx context.Context) error {
			return p.startPlanes(ctx, karmadaCRDs)
		}},
		{"link proxy", p.startLinks},
		{"Karmada, the projects' Locations, the overlays' identities and the real nodes", func(ctx context.Context) error {
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return p.startKarmada(gctx, karmada) })
			g.Go(func() error { return p.seedProjects(gctx) })
			g.Go(func() error { return p.installIdentities(gctx) })
			g.Go(func() error { return p.startNodes(gctx) })
			return g.Wait()
		}},
		{"compute-quota and compute-manager", func(ctx context.Context) error {
			return p.startManagers(ctx, managers)
		}},
	}
	for _, ph := range phases {
		began := time.Now()
		if err := ph.run(ctx); err != nil {
			return err
		}
		p.timing(ph.name, began)
	}
	return nil
}

// startPlanes starts etcd and every plane, and records them.
func (p *Platform) startPlanes(ctx context.Context, karmadaCRDs string) error {
	specs, err := p.planeSpecs(karmadaCRDs)
	if err != nil {
		return err
	}
	env, err := planes.Start(ctx, planes.Options{
		Dir:     p.cfg.StateDir,
		Planes:  specs,
		Log:     p.progress,
		Detach:  p.cfg.Detach,
		Timeout: p.cfg.Timeout,
	})
	if err != nil {
		return err
	}
	p.env = env
	if p.prober, err = newProber(env.CAPEM()); err != nil {
		return err
	}
	p.recordPlanes()
	return p.saveState()
}

// planeSpecs describes every plane: projects, hub, cells.
func (p *Platform) planeSpecs(karmadaCRDs string) ([]planes.PlaneSpec, error) {
	computeCRDs := filepath.Join(p.repo, "config", "crd", "bases")
	externalCRDs := filepath.Join(p.repo, "config", "crd", "external")
	specs := make([]planes.PlaneSpec, 0, len(p.cfg.Projects)+1+len(p.cfg.Cities))
	webhookClients, err := p.writeWebhookClients()
	if err != nil {
		return nil, err
	}
	for _, project := range p.cfg.Projects {
		specs = append(specs, planes.PlaneSpec{
			Name:              ProjectPlane(project),
			ControllerManager: true,
			CRDDirs:           []string{computeCRDs, externalCRDs},
			// The debug API is an aggregated API of the project plane.
			Aggregation: true,
			ExtraArgs:   webhookClients,
		})
	}
	specs = append(specs, planes.PlaneSpec{
		Name:              HubPlane,
		ControllerManager: true,
		CRDDirs:           []string{karmadaCRDs, computeCRDs},
		Aggregation:       true,
	})
	for _, city := range p.cfg.Cities {
		cellCRDs := []string{computeCRDs}
		if p.cfg.networkingIntegration() {
			// The networking contract's kinds (NetworkBinding, …).
			cellCRDs = append(cellCRDs, externalCRDs)
		}
		spec, err := p.cellSpec(city, cellCRDs)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	// Every kube-controller-manager serves /healthz on loopback, so
	// status can tell a live one from a ready one.
	ports, err := planes.FreePorts(len(specs))
	if err != nil {
		return nil, err
	}
	for i := range specs {
		p.kcmPorts[specs[i].Name] = ports[i]
		specs[i].ControllerManagerArgs = kcmHealthArgs(ports[i])
		if slices.Contains(specs[i].Controllers, "nodelifecycle") {
			specs[i].ControllerManagerArgs["node-monitor-grace-period"] = nodeMonitorGracePeriod.String()
			specs[i].ControllerManagerArgs["node-monitor-period"] = "2s"
		}
		if slices.Contains(specs[i].Controllers, hpaController) {
			maps.Copy(specs[i].ControllerManagerArgs, hpaControllerArgs)
		}
	}
	return specs, nil
}

// cellSpec describes a city's cell plane and writes the token Karmada
// reaches it with.
func (p *Platform) cellSpec(city string, crdDirs []string) (planes.PlaneSpec, error) {
	name := CellPlane(city)
	token, err := newToken()
	if err != nil {
		return planes.PlaneSpec{}, err
	}
	p.tokens[name] = token
	tokenFile := filepath.Join(p.cfg.StateDir, "karmada", "tokens", name+".csv")
	if err := writeTokenFile(tokenFile, token); err != nil {
		return planes.PlaneSpec{}, fmt.Errorf("failed to write the token file of %s: %w", name, err)
	}
	node := p.cfg.hasNode(city)
	// Karmada's push mode authenticates to members with a bearer token
	// only.
	extra := map[string]string{"token-auth-file": tokenFile}
	if node {
		// Pod logs and exec reach the node's kubelet.
		kubelet, err := p.kubeletClientArgs()
		if err != nil {
			return planes.PlaneSpec{}, err
		}
		maps.Copy(extra, kubelet)
	}
	return planes.PlaneSpec{
		Name:        name,
		Controllers: cellControllers(node),
		CRDDirs:     crdDirs,
		// A cell with a real node serves metrics.k8s.io through its
		// aggregator (metrics-server).
		Aggregation: node,
		ExtraArgs:   extra,
	}, nil
}

// seedProjects creates Locations and LocationBindings in every project.
func (p *Platform) seedProjects(ctx context.Context) error {
	for _, project := range p.cfg.Projects {
		c, err := newClient(p.env.Plane(ProjectPlane(project)))
		if err != nil {
			return err
		}
		if err := seedProject(ctx, c, project, p.cfg.Cities); err != nil {
			return fmt.Errorf("project %s: %w", project, err)
		}
	}
	p.progress.linef("Locations and LocationBindings for %s in project(s) %s",
		strings.Join(p.cfg.Cities, ","), strings.Join(p.cfg.Projects, ","))
	return nil
}

// recordPlanes writes the planes and their processes into the state.
func (p *Platform) recordPlanes() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, project := range p.cfg.Projects {
		p.state.Planes = append(p.state.Planes, p.planeRecord(ProjectPlane(project), RoleProject, project, ""))
	}
	p.state.Planes = append(p.state.Planes, p.planeRecord(HubPlane, RoleHub, "", ""))
	for _, city := range p.cfg.Cities {
		p.state.Planes = append(p.state.Planes, p.planeRecord(CellPlane(city), RoleCell, "", city))
	}
	for _, proc := range p.env.Processes() {
		rec := ComponentRecord{
			Name: proc.Name, Plane: proc.Plane, PID: proc.PID, Port: proc.Port, Binary: proc.Args[0], Log: proc.LogPath,
			Args: proc.Args,
		}
		switch {
		case proc.Name == "etcd":
			rec.Health = "http://" + hostPort(proc.Port) + "/health"
		case proc.Port != 0:
			rec.Health = "https://" + hostPort(proc.Port) + "/readyz"
		case p.kcmPorts[proc.Plane] != 0 && strings.HasPrefix(proc.Name, "kube-controller-manager"):
			rec.Port = p.kcmPorts[proc.Plane]
			rec.Health, rec.HealthSelfSigned = "https://"+hostPort(rec.Port)+"/healthz", true
		}
		p.state.Components = append(p.state.Components, rec)
	}
}

// planeRecord describes a started plane.
func (p *Platform) planeRecord(name, role, project, city string) PlaneRecord {
	pl := p.env.Plane(name)
	return PlaneRecord{Name: name, Role: role, Project: project, City: city, URL: pl.URL(), Kubeconfig: pl.KubeconfigPath()}
}

// startComponent starts a component that is ready when health answers 200
// (over HTTPS with a certificate of its own making when selfSigned), and
// records it.
func (p *Platform) startComponent(ctx context.Context, spec planes.ComponentSpec, health string, selfSigned bool) error {
	spec.Ready = func(ctx context.Context) (bool, error) { return p.prober.probe(ctx, health, selfSigned) }
	spec.Timeout = p.cfg.Timeout
	proc, err := p.env.StartComponent(ctx, spec)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.state.Components = append(p.state.Components, ComponentRecord{
		Name: proc.Name, Plane: proc.Plane, PID: proc.PID, Port: proc.Port, Binary: proc.Args[0], Log: proc.LogPath, Health: health,
		HealthSelfSigned: selfSigned, Args: proc.Args,
	})
	p.mu.Unlock()
	return p.saveState()
}

// skip records a component that was not started and says so.
func (p *Platform) skip(name, reason string) {
	p.mu.Lock()
	p.state.Skipped = append(p.state.Skipped, SkippedRecord{Name: name, Reason: reason})
	p.mu.Unlock()
	p.progress.linef("not starting %s: %s", name, reason)
}

// timing records how long a phase took.
func (p *Platform) timing(phase string, began time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timings = append(p.timings, Timing{Phase: phase, Duration: time.Since(began)})
}

// saveState writes the state file.
func (p *Platform) saveState() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.write()
}

// stop stops every process and removes the state file.
func (p *Platform) stop() {
	if p.linkProxy != nil {
		p.linkProxy.Close()
	}
	st := p.State()
	// The nodes' Pods go first, while their containerd still runs.
	cleanNodes(st, p.progress)
	p.env.Stop()
	// Processes `start` ran again are not the environment's children.
	_, _ = stopComponents(st.Components)
	removeNodes(st.Nodes, p.progress)
	if p.stopRegistry != nil {
		p.stopRegistry()
	}
	if err := removeState(p.cfg.StateDir); err != nil {
		p.progress.linef("%v", err)
	}
}

// Down stops every process of the platform (managers and Karmada first,
// etcd last), waits for them to exit and removes the state file; the state
// directory keeps kubeconfigs and logs. It is idempotent.
func (p *Platform) Down() {
	if p == nil {
		return
	}
	p.downOnce.Do(p.stop)
}

// State returns a copy of the platform's recorded state.
func (p *Platform) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.state
	s.Planes = slices.Clone(s.Planes)
	s.Components = slices.Clone(s.Components)
	s.Clusters = slices.Clone(s.Clusters)
	s.Skipped = slices.Clone(s.Skipped)
	s.IdentityTokens = slices.Clone(s.IdentityTokens)
	return s
}

// Timings returns how long each phase of Up took, ending with "total".
func (p *Platform) Timings() []Timing {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.timings)
}

// Config returns an admin client configuration of a plane (see
// State.Plane for the names accepted), or nil.
func (p *Platform) Config(plane string) *rest.Config {
	st := p.State()
	rec, err := st.Plane(plane)
	if err != nil {
		return nil
	}
	return p.env.Plane(rec.Name).Config()
}

// Environment returns the planes environment, for tests that stop and start
// a plane's apiserver.
func (p *Platform) Environment() *planes.Environment {
	return p.env
}

// Processes returns every process the platform runs.
func (p *Platform) Processes() []planes.Process {
	return p.env.Processes()
}

// checkNotRunning fails with AlreadyRunningError when dir records a live
// platform, and with an error naming `down` when processes of an
// interrupted start still run; a record whose processes are all gone is
// discarded.
func checkNotRunning(dir string) error {
	st, err := ReadState(dir)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	if st != nil {
		alive := 0
		for _, c := range st.Components {
			if owned(c) {
				alive++
			}
		}
		if alive > 0 {
			return &AlreadyRunningError{State: st, Alive: alive, Total: len(st.Components)}
		}
	}
	if strays := strayProcesses(dir, nil); len(strays) > 0 {
		names := make([]string, 0, len(strays))
		for _, s := range strays {
			names = append(names, fmt.Sprintf("%s (pid %d)", s.Name, s.PID))
		}
		return fmt.Errorf("%d processes of an interrupted start still run in %s (%s): run `compute-local down` first",
			len(strays), dir, strings.Join(names, ", "))
	}
	if st != nil {
		return removeState(dir)
	}
	return nil
}

// prepareDir clears what a previous run left in the state directory except
// bin/ (the compute-manager build) and keeps the previous logs in
// logs.previous/.
func prepareDir(dir string) error {
	for _, sub := range []string{"etcd", "pki", "planes", "karmada", "logs.previous", "registry"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("failed to clear %s: %w", filepath.Join(dir, sub), err)
		}
	}
	kubeconfigs, _ := filepath.Glob(filepath.Join(dir, "*.kubeconfig"))
	for _, k := range kubeconfigs {
		if err := os.Remove(k); err != nil {
			return fmt.Errorf("failed to clear %s: %w", k, err)
		}
	}
	err := os.Rename(filepath.Join(dir, "logs"), filepath.Join(dir, "logs.previous"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to keep the previous logs: %w", err)
	}
	return nil
}

// modulePath identifies the compute repository's go.mod.
const modulePath = "module github.com/citycells/compute"

// findRepo returns dir if set, else the compute module root above the
// working directory, else above the running executable.
func findRepo(dir string) (string, error) {
	if dir != "" {
		if !isRepo(dir) {
			return "", fmt.Errorf("%s is not the compute repository (no go.mod of github.com/citycells/compute)", dir)
		}
		return filepath.Abs(dir)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			if isRepo(d) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("compute-local needs the compute repository (CRDs in config/crd, the interpreter in config/federation): " +
		"run it from a clone, or pass --repo DIR")
}

// isRepo reports whether dir holds compute's go.mod.
func isRepo(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(first) == modulePath
}
