package planes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/citycells/compute/internal/toolchain"
)

// DefaultTimeout bounds how long Start waits for any one component to
// become ready when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Options configures Start.
type Options struct {
	// Dir holds PKI, etcd data, kubeconfigs and logs. Empty means a new
	// temporary directory that Stop removes; a caller-provided Dir is
	// created if missing and kept (an existing etcd data dir in it is
	// reused, certificates are regenerated).
	Dir string
	// Planes to start; names must be unique DNS labels.
	Planes []PlaneSpec
	// Log receives one progress line per component and step; nil discards.
	Log io.Writer
	// Detach starts processes without Pdeathsig so they outlive the caller
	// (compute-local up). They still get their own process group, and Stop
	// still stops them.
	Detach bool
	// Timeout bounds each readiness wait (etcd, each apiserver, CRDs,
	// each controller manager); zero means DefaultTimeout.
	Timeout time.Duration
}

// PlaneSpec describes one plane: a kube-apiserver with its own etcd prefix,
// optionally a kube-controller-manager, and the CRDs installed before it.
type PlaneSpec struct {
	// Name identifies the plane; it is the etcd prefix (/<name>), the
	// kubeconfig cluster and context name and part of every file name.
	Name string
	// ControllerManager runs a kube-controller-manager with
	// DefaultControllers against the plane.
	ControllerManager bool
	// Controllers overrides DefaultControllers (e.g. add "statefulset"); a
	// non-empty list implies ControllerManager.
	Controllers []string
	// ControllerManagerArgs are extra kube-controller-manager flags (key
	// without the leading dashes); they override the defaults.
	ControllerManagerArgs map[string]string
	// CRDDirs are directories whose CRDs (see ReadCRDs) are installed and
	// established before the controller manager starts.
	CRDDirs []string
	// CRDs are installed along with those of CRDDirs; they are not mutated.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Aggregation configures the front-proxy: --requestheader-* flags
	// trusting the environment's front-proxy CA and --proxy-client-* flags,
	// so the plane can serve aggregated APIs (Karmada's clusters).
	Aggregation bool
	// SANs are extra names or IPs for the plane's serving certificate, in
	// addition to localhost, 127.0.0.1 and ::1.
	SANs []string
	// ExtraArgs are extra kube-apiserver flags (key without the leading
	// dashes); they override the defaults.
	ExtraArgs map[string]string
}

// runsControllerManager reports whether the plane gets a controller manager.
func (s PlaneSpec) runsControllerManager() bool {
	return s.ControllerManager || len(s.Controllers) > 0
}

// Environment is a running set of planes sharing one etcd and one CA.
type Environment struct {
	dir     string
	ownsDir bool
	keepDir bool
	timeout time.Duration
	bin     binaries
	pki     *environmentPKI
	etcdURL string
	planes  []*Plane
	spawner *spawner // nil when detached

	logMu sync.Mutex
	log   io.Writer

	mu    sync.Mutex
	procs []*process

	stopOnce sync.Once
}

// binaries are the resolved paths of the components.
type binaries struct {
	etcd              string
	apiServer         string
	controllerManager string
}

// planeName is what a plane name must look like: it ends up in paths,
// flags and the etcd prefix.
var planeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Start starts etcd and every plane of opts. Apiservers start concurrently;
// each plane then gets its CRDs (established and discoverable) and only then
// its controller manager. On any failure Start stops what it started and
// returns an error naming the component, with the tail of its log. ctx
// bounds start-up only: the processes outlive it until Stop.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	started := time.Now()
	if err := validate(opts); err != nil {
		return nil, err
	}
	bin, err := resolveBinaries(opts.Planes)
	if err != nil {
		return nil, err
	}
	e := &Environment{
		dir:     opts.Dir,
		timeout: opts.Timeout,
		bin:     bin,
		log:     opts.Log,
	}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	if e.log == nil {
		e.log = io.Discard
	}
	if e.dir == "" {
		e.dir, err = os.MkdirTemp("", "compute-planes-")
		if err != nil {
			return nil, fmt.Errorf("failed to create environment directory: %w", err)
		}
		e.ownsDir = true
	}
	if !opts.Detach {
		e.spawner = newSpawner()
	}
	if err := e.start(ctx, opts.Planes); err != nil {
		e.Stop()
		return nil, err
	}
	e.logf("%d planes ready in %s (dir %s)", len(e.planes), since(started), e.dir)
	return e, nil
}

// start does the work of Start; the caller stops e on error.
func (e *Environment) start(ctx context.Context, specs []PlaneSpec) error {
	if err := os.MkdirAll(filepath.Join(e.dir, "logs"), 0o700); err != nil {
		return fmt.Errorf("failed to create environment directory: %w", err)
	}
	pki, err := newEnvironmentPKI(filepath.Join(e.dir, "pki"))
	if err != nil {
		return err
	}
	e.pki = pki

	// Every port up front, from listeners held together, so no two
	// components of this environment are handed the same one.
	ports, err := FreePorts(2 + len(specs))
	if err != nil {
		return err
	}
	for _, spec := range specs {
		p, err := newPlane(e, spec)
		if err != nil {
			return err
		}
		e.planes = append(e.planes, p)
	}
	if err := e.startEtcd(ctx, ports[0], ports[1]); err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	for i, p := range e.planes {
		g.Go(func() error {
			if err := e.startPlane(gctx, p, ports[2+i]); err != nil {
				return fmt.Errorf("plane %s: %w", p.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// startPlane brings up one plane: apiserver, kubeconfig, CRDs, controller
// manager, in that order.
func (e *Environment) startPlane(ctx context.Context, p *Plane, port int) error {
	if err := e.startAPIServer(ctx, p, port); err != nil {
		return err
	}
	if err := p.writeKubeconfig(); err != nil {
		return err
	}
	crds, err := ReadCRDs(p.spec.CRDDirs...)
	if err != nil {
		return err
	}
	crds = append(crds, p.spec.CRDs...)
	if len(crds) > 0 {
		began := time.Now()
		cctx, cancel := context.WithTimeout(ctx, e.timeout)
		err := installCRDs(cctx, p.config, crds)
		cancel()
		if err != nil {
			return err
		}
		e.logf("plane %s: %d CRDs established (%s)", p.name, len(crds), since(began))
	}
	if p.spec.runsControllerManager() {
		return e.startControllerManager(ctx, p)
	}
	return nil
}

// validate checks opts before anything is started.
func validate(opts Options) error {
	if len(opts.Planes) == 0 {
		return errors.New("no planes to start")
	}
	seen := map[string]bool{}
	for _, s := range opts.Planes {
		if !planeName.MatchString(s.Name) || len(s.Name) > 63 {
			return fmt.Errorf("invalid plane name %q: use lower-case letters, digits and dashes", s.Name)
		}
		if seen[s.Name] {
			return fmt.Errorf("plane %q is listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// resolveBinaries finds the binaries the planes need; the error of a missing
// one says to run `make tools`.
func resolveBinaries(specs []PlaneSpec) (binaries, error) {
	var b binaries
	var err error
	if b.etcd, err = toolchain.Path(toolchain.Etcd); err != nil {
		return b, err
	}
	if b.apiServer, err = toolchain.Path(toolchain.KubeAPIServer); err != nil {
		return b, err
	}
	if slices.ContainsFunc(specs, PlaneSpec.runsControllerManager) {
		if b.controllerManager, err = toolchain.Path(toolchain.KubeControllerManager); err != nil {
			return b, err
		}
	}
	return b, nil
}

// launch starts a process and records it for Stop.
func (e *Environment) launch(s launchSpec, tier int) (*process, error) {
	p, err := launch(s, filepath.Join(e.dir, "logs"), e.spawner)
	if err != nil {
		return nil, err
	}
	p.tier = tier
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p, nil
}

// forget drops an exited process (a lost port race) from the records.
func (e *Environment) forget(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = slices.DeleteFunc(e.procs, func(q *process) bool { return q == p })
	_ = p.logFile.Close()
}

// logf writes a progress line.
func (e *Environment) logf(format string, args ...any) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	// Progress lines are best effort: a broken log must not fail a start.
	_, _ = fmt.Fprintf(e.log, "planes: "+format+"\n", args...)
}

// Stop stops every process the environment started: components
// (StartComponent), then controller managers, then apiservers, then etcd,
// each process group with SIGTERM and, after a few seconds, SIGKILL. It
// waits for them to exit and removes the directory Start created (a
// caller-provided Dir is kept). Stop is idempotent and safe
// on a nil Environment, so `defer env.Stop()` needs no error check first.
func (e *Environment) Stop() {
	if e == nil {
		return
	}
	e.stopOnce.Do(func() {
		began := time.Now()
		e.mu.Lock()
		procs := slices.Clone(e.procs)
		e.mu.Unlock()
		for _, tier := range []int{tierComponent, tierControllerManager, tierAPIServer, tierEtcd} {
			var wg sync.WaitGroup
			for _, p := range procs {
				if p.tier != tier {
					continue
				}
				wg.Go(func() {
					if err := p.stop(); err != nil {
						e.logf("%v", err)
					}
				})
			}
			wg.Wait()
		}
		if e.spawner != nil {
			e.spawner.close()
		}
		if e.ownsDir && !e.keepDir {
			if err := os.RemoveAll(e.dir); err != nil {
				e.logf("failed to remove %s: %v", e.dir, err)
			}
		}
		e.logf("stopped %d processes (%s)", len(procs), since(began))
	})
}

// Dir returns the environment directory: pki/, etcd/, logs/, planes/<name>/
// and one <name>.kubeconfig per plane.
func (e *Environment) Dir() string {
	return e.dir
}

// Plane returns the plane named name, or nil if there is none.
func (e *Environment) Plane(name string) *Plane {
	for _, p := range e.planes {
		if p.name == name {
			return p
		}
	}
	return nil
}

// Planes returns the planes in the order of Options.Planes.
func (e *Environment) Planes() []*Plane {
	return slices.Clone(e.planes)
}

// Processes returns every process the environment started, including any
// that has since exited.
func (e *Environment) Processes() []Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Process, 0, len(e.procs))
	for _, p := range e.procs {
		info := p.info
		info.Args = slices.Clone(info.Args)
		out = append(out, info)
	}
	return out
}

// EtcdURL returns the client URL of the shared etcd.
func (e *Environment) EtcdURL() string {
	return e.etcdURL
}

// CAPEM returns the PEM certificate of the environment CA, which signs every
// plane's serving certificate and every client identity.
func (e *Environment) CAPEM() []byte {
	return slices.Clone(e.pki.ca.certPEM)
}

// CAPath returns the path of the environment CA's certificate file.
func (e *Environment) CAPath() string {
	return e.pki.caPath
}

// IssueServingCert signs a serving certificate with the environment CA for
// localhost, 127.0.0.1, ::1 and sans (IPs become IP SANs), for components
// that planes call back, such as webhooks and aggregated apiservers.
func (e *Environment) IssueServingCert(commonName string, sans ...string) (certPEM, keyPEM []byte, err error) {
	kp, err := e.pki.ca.serving(commonName, sans...)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}
