package quota

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
)

// Planes reaches the quota plane of a project.
type Planes interface {
	// ClientFor returns a client of project's quota plane. It fails with
	// ErrProjectNotFound when there is no way to reach such a project.
	ClientFor(project string) (client.Client, error)
}

// MiloControlPlanePath is the path under Milo's API host that serves a
// project's control plane; %s is the project name.
const MiloControlPlanePath = "/apis/resourcemanager.miloapis.com/v1alpha1/projects/%s/control-plane"

// scheme knows the quota kinds the clients read and write.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := quotav1alpha1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("quota: cannot build scheme: %v", err))
	}
	return s
}()

// mapper maps the quota kinds without discovery, so reaching a project's
// plane costs no round trip before the first real request.
var mapper = func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{quotav1alpha1.GroupVersion})
	for _, kind := range []string{quotav1alpha1.ResourceClaimKind, quotav1alpha1.ResourceGrantKind, quotav1alpha1.AllowanceBucketKind} {
		m.Add(quotav1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	m.Add(quotav1alpha1.GroupVersion.WithKind(quotav1alpha1.ResourceRegistrationKind), meta.RESTScopeRoot)
	return m
}()

// Client-side rate limits of quota plane clients whose configuration sets
// none: client-go's defaults (5 QPS) would throttle a cell re-evaluating a
// few hundred pending Instances every second.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

// withRateLimits returns a copy of cfg with the default rate limits filled
// in.
func withRateLimits(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = defaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = defaultBurst
	}
	return cfg
}

// newPlaneClient builds a client of one quota plane.
func newPlaneClient(cfg *rest.Config, hc *http.Client) (client.Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("failed to build quota client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// MiloPlanes reaches every project's control plane through Milo's API host:
// <base host>/apis/resourcemanager.miloapis.com/v1alpha1/projects/<project>/control-plane,
// with the base configuration's credentials. A project that does not exist
// answers 404, which maps to QuotaProjectNotFound.
type MiloPlanes struct {
	base *rest.Config
	hc   *http.Client

	mu      sync.Mutex
	clients map[string]client.Client
}

// NewMiloPlanes returns Planes for Milo's API host described by base.
func NewMiloPlanes(base *rest.Config) (*MiloPlanes, error) {
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, fmt.Errorf("failed to build HTTP client for %s: %w", base.Host, err)
	}
	return &MiloPlanes{base: withRateLimits(base), hc: hc, clients: map[string]client.Client{}}, nil
}

// ClientFor returns the client of project's control plane, built once.
func (p *MiloPlanes) ClientFor(project string) (client.Client, error) {
	if errs := validation.IsDNS1123Label(project); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %q is not a project name: %s", ErrProjectNotFound, project, strings.Join(errs, "; "))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[project]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(p.base)
	cfg.Host = MiloControlPlaneHost(p.base.Host, project)
	c, err := newPlaneClient(cfg, p.hc)
	if err != nil {
		return nil, err
	}
	p.clients[project] = c
	return c, nil
}

// MiloControlPlaneHost returns the host URL of a project's control plane
// under Milo's API host.
func MiloControlPlaneHost(baseHost, project string) string {
	return strings.TrimSuffix(baseHost, "/") + fmt.Sprintf(MiloControlPlanePath, project)
}

// StaticPlanes reaches projects through fixed configurations: one per
// project, and optionally one for every other project. The local platform
// uses it with a kubeconfig per project plane.
type StaticPlanes struct {
	configs  map[string]*rest.Config
	fallback *rest.Config

	mu      sync.Mutex
	clients map[*rest.Config]client.Client
}

// NewStaticPlanes returns Planes that reach project p through configs[p], or
// through fallback when configs has no entry (nil fallback: such projects
// are not found).
func NewStaticPlanes(configs map[string]*rest.Config, fallback *rest.Config) *StaticPlanes {
	cp := make(map[string]*rest.Config, len(configs))
	for k, v := range configs {
		cp[k] = withRateLimits(v)
	}
	var fb *rest.Config
	if fallback != nil {
		fb = withRateLimits(fallback)
	}
	return &StaticPlanes{configs: cp, fallback: fb, clients: map[*rest.Config]client.Client{}}
}

// NewKubeconfigPlanes loads a kubeconfig whose contexts reach quota planes:
// a context named after a project reaches that project, and the current
// context (if any) every other project. A missing or unreadable file is an
// error: quota that is configured must not silently turn itself off.
func NewKubeconfigPlanes(path string) (*StaticPlanes, error) {
	return newKubeconfigPlanes(path, func(*rest.Config) {})
}

// newKubeconfigPlanes is NewKubeconfigPlanes, passing each context's
// configuration through limit.
func newKubeconfigPlanes(path string, limit func(*rest.Config)) (*StaticPlanes, error) {
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to load quota kubeconfig %s: %w", path, err)
	}
	configs := map[string]*rest.Config{}
	for name := range raw.Contexts {
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("failed to load context %q of quota kubeconfig %s: %w", name, path, err)
		}
		limit(cfg)
		configs[name] = cfg
	}
	var fallback *rest.Config
	if raw.CurrentContext != "" {
		fallback = configs[raw.CurrentContext]
	}
	if len(configs) == 0 {
		return nil, fmt.Errorf("quota kubeconfig %s has no contexts", path)
	}
	return NewStaticPlanes(configs, fallback), nil
}

// LoadPlanes returns the Planes a cell reaches its projects' quota planes
// through, from a kubeconfig file: with milo, its current context is Milo's
// API host and projects are reached by Milo's URL scheme; without, its
// contexts are the planes themselves (see NewKubeconfigPlanes).
func LoadPlanes(kubeconfig string, milo bool) (Planes, error) {
	return LoadPlanesWithLimits(kubeconfig, milo, 0, 0)
}

// LoadPlanesWithLimits is LoadPlanes with the client-side rate limits of
// every quota plane client (the cell's own, so that a burst of claims is
// not throttled harder than the Instances they gate); zero keeps what the
// kubeconfig says, or the package's defaults.
func LoadPlanesWithLimits(kubeconfig string, milo bool, qps float32, burst int) (Planes, error) {
	limit := func(cfg *rest.Config) {
		if qps > 0 {
			cfg.QPS = qps
		}
		if burst > 0 {
			cfg.Burst = burst
		}
	}
	if !milo {
		return newKubeconfigPlanes(kubeconfig, limit)
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("failed to load quota kubeconfig %s: %w", kubeconfig, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load quota kubeconfig %s: %w", kubeconfig, err)
	}
	limit(cfg)
	return NewMiloPlanes(cfg)
}

// configFor returns the configuration that reaches project.
func (p *StaticPlanes) configFor(project string) (*rest.Config, error) {
	cfg, ok := p.configs[project]
	if !ok {
		cfg = p.fallback
	}
	if cfg == nil {
		return nil, fmt.Errorf("%w: no quota plane is configured for project %q", ErrProjectNotFound, project)
	}
	return cfg, nil
}

// ClientFor returns the client of project's plane, built once per plane.
func (p *StaticPlanes) ClientFor(project string) (client.Client, error) {
	cfg, err := p.configFor(project)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[cfg]; ok {
		return c, nil
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build HTTP client for %s: %w", cfg.Host, err)
	}
	c, err := newPlaneClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	p.clients[cfg] = c
	return c, nil
}

// distinctConfigs returns each distinct plane configuration once, sorted by host,
// for watches.
func (p *StaticPlanes) distinctConfigs() []*rest.Config {
	seen := map[string]*rest.Config{}
	add := func(c *rest.Config) {
		if c != nil {
			seen[planeKey(c)] = c
		}
	}
	for _, c := range p.configs {
		add(c)
	}
	add(p.fallback)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*rest.Config, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out
}

// planeKey identifies a plane configuration: its host and identity.
func planeKey(c *rest.Config) string {
	return c.Host + "\x00" + c.Username + "\x00" + string(c.CertData)
}
