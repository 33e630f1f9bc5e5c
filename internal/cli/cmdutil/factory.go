package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha "github.com/citycells/compute/api/networking/v1alpha"
	quotav1alpha1 "github.com/citycells/compute/api/quota/v1alpha1"
	servicesv1alpha1 "github.com/citycells/compute/api/services/v1alpha1"
	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// Defaults of the Factory's tunables.
const (
	// DefaultPollInterval is how often waits re-evaluate what they watch
	// without a change (elapsed times) and how often the entitlement wait
	// reads the server.
	DefaultPollInterval = time.Second
	// DefaultActivationWait is how long a command waits for compute to
	// become active after requesting it, before it stops with ExitPending.
	DefaultActivationWait = 30 * time.Second
	// DefaultNamespace is the namespace used when neither --namespace nor
	// the kubeconfig context names one.
	DefaultNamespace = "default"
)

// BuildInfo identifies the binary.
type BuildInfo struct {
	// Version is the release version, e.g. v0.1.0; "dev" for a local build.
	Version string `json:"version"`
	// Commit is the source commit, when known.
	Commit string `json:"commit,omitempty"`
}

// Factory gives commands their streams, clock, environment and API
// client. The root command binds the global flags to its fields; tests
// build one with buffers, a fake clock and a kubeconfig of a real API
// server.
type Factory struct {
	// Streams are the standard streams.
	Streams IOStreams
	// Clock tells the time and drives waits.
	Clock clock.WithTicker
	// Getenv reads the environment (the DATUM_* plugin context).
	Getenv func(string) string
	// Build identifies the binary.
	Build BuildInfo
	// Run runs the credentials helper; ExecRunner when nil.
	Run CommandRunner
	// PollInterval is how often waits re-evaluate without a change (they
	// watch the server; see WatchUntil); DefaultPollInterval when zero.
	PollInterval time.Duration
	// ActivationWait bounds the wait for a newly requested entitlement;
	// DefaultActivationWait when zero.
	ActivationWait time.Duration
	// Name is how users invoke the binary: "datumctl compute" under
	// datumctl, "datumctl-compute" standalone. Hints use it.
	Name string

	// Kubeconfig is --kubeconfig.
	Kubeconfig string
	// Context is --context.
	Context string
	// Namespace is -n/--namespace.
	Namespace string
	// Project is --project (default $DATUM_PROJECT).
	Project string
	// Yes is -y/--yes: answer yes to every confirmation.
	Yes bool

	clients *Clients
	input   *bufio.Reader
	config  *genericclioptions.ConfigFlags
}

// ConfigFlags returns kubectl's connection flags bound to the Factory's
// Kubeconfig, Context and Namespace (no discovery cache: the CLI knows its
// kinds).
func (f *Factory) ConfigFlags() *genericclioptions.ConfigFlags {
	if f.config == nil {
		cf := genericclioptions.NewConfigFlags(false)
		cf.KubeConfig, cf.Context, cf.Namespace = &f.Kubeconfig, &f.Context, &f.Namespace
		cf.CacheDir = nil
		f.config = cf
	}
	return f.config
}

// Target says which project or cluster the CLI talks to, for messages.
type Target struct {
	// Project is the Datum project, when known.
	Project string
	// Context is the kubeconfig context, in standalone mode.
	Context string
	// Namespace is the namespace commands act in.
	Namespace string
	// Offline says no project or cluster is configured (OfflineClients).
	Offline bool
}

// String describes the target: `project "p"` or `context "c"`.
func (t Target) String() string {
	switch {
	case t.Project != "":
		return fmt.Sprintf("project %q", t.Project)
	case t.Context != "":
		return fmt.Sprintf("context %q", t.Context)
	case t.Offline:
		return "no cluster"
	}
	return "this cluster"
}

// Clients are what commands talk to the project with.
type Clients struct {
	// Client reads, writes and watches every kind the CLI uses.
	Client client.WithWatch
	// Scheme knows every kind the CLI uses.
	Scheme *runtime.Scheme
	// Config is the REST configuration behind Client.
	Config *rest.Config
	// Namespace is the namespace commands act in.
	Namespace string
	// Target describes the project for messages.
	Target Target
}

// NewScheme returns a scheme with the Kubernetes built-in kinds and every
// kind the CLI reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		computev1alpha.AddToScheme,
		networkingv1alpha.AddToScheme,
		quotav1alpha1.AddToScheme,
		servicesv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("cmdutil: cannot build the scheme: %v", err))
		}
	}
	return s
}

// AddGlobalFlags binds the flags every command shares to f.
func (f *Factory) AddGlobalFlags(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	// kubectl's connection flags (--kubeconfig, --context, -n, --server,
	// --request-timeout, --as, ...), bound to the Factory's fields.
	f.ConfigFlags().AddFlags(fl)
	fl.StringVar(&f.Project, "project", f.Project, "Datum project to act in (default $DATUM_PROJECT).")
	fl.BoolVarP(&f.Yes, "yes", "y", f.Yes,
		"Answer yes to every confirmation: deploy plans, destroy, and requesting compute for the project.")
	_ = cmd.RegisterFlagCompletionFunc("namespace", f.completeNamespaces)
	_ = cmd.RegisterFlagCompletionFunc("context", f.completeContexts)
}

// Cmd returns a command line users can copy: the binary name followed by
// the formatted arguments.
func (f *Factory) Cmd(format string, args ...any) string {
	name := f.Name
	if name == "" {
		name = "datumctl compute"
	}
	return name + " " + fmt.Sprintf(format, args...)
}

// Poll returns the interval waits re-evaluate at without a change.
func (f *Factory) Poll() time.Duration {
	if f.PollInterval > 0 {
		return f.PollInterval
	}
	return DefaultPollInterval
}

// Now returns the current time of the Factory's clock.
func (f *Factory) Now() time.Time { return f.Clock.Now() }

// Clients connects to the project, once per process. It only connects:
// whether compute is enabled for the project is a step of its own
// (EnsureEnabled), which commands take through ProjectRef.Resolve.
func (f *Factory) Clients() (*Clients, error) {
	if f.clients != nil {
		return f.clients, nil
	}
	c, err := f.connect()
	if err != nil {
		return nil, err
	}
	f.clients = c
	return c, nil
}

// connect builds the REST configuration and client.
func (f *Factory) connect() (*Clients, error) {
	cfg, target, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "datumctl-compute/" + f.Build.Version
	cfg.QPS, cfg.Burst = 50, 100
	// The server's warnings (admission's: a Location not ready, a
	// deprecated instance type) reach the user as kubectl shows them.
	cfg.WarningHandler = rest.NewWarningWriter(f.Streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	scheme := NewScheme()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, WithHints(fmt.Errorf("cannot create a client for %s: %w", target, err),
			"Check the server address and credentials of your kubeconfig or Datum context.")
	}
	return &Clients{Client: c, Scheme: scheme, Config: cfg, Namespace: target.Namespace, Target: target}, nil
}

// restConfig chooses the mode: an explicit --kubeconfig or --context
// means standalone; otherwise a Datum context from datumctl; otherwise the
// default kubeconfig.
func (f *Factory) restConfig() (*rest.Config, Target, error) {
	pc := ReadPluginContext(f.getenv)
	explicit := f.Kubeconfig != "" || f.Context != ""
	if !explicit && pc.LoggedOut() {
		// datumctl runs plugins even when nobody is logged in; falling
		// back to $KUBECONFIG then would act on whatever cluster it names.
		return nil, Target{}, &ExitError{Code: ExitFailure,
			Err:   noCluster{errors.New("not logged in — run `datumctl login`")},
			Hints: []string{"Or pass --kubeconfig (and --context) to talk to a cluster directly."}}
	}
	if !explicit && pc.Active() {
		project := f.Project
		if project == "" {
			project = pc.Project
		}
		if project == "" {
			return nil, Target{}, UsageErrorf("no Datum project is selected")
		}
		run := f.Run
		if run == nil {
			run = ExecRunner
		}
		cfg := &rest.Config{
			Host:          pc.ServerURL(project),
			WrapTransport: WrapTransport(&TokenSource{Context: pc, Run: run}),
		}
		if err := applyConnectionFlags(cfg, f.ConfigFlags()); err != nil {
			return nil, Target{}, err
		}
		ns := f.Namespace
		if ns == "" {
			ns = DefaultNamespace
		}
		return cfg, Target{Project: project, Namespace: ns}, nil
	}

	loader := f.ConfigFlags().ToRawKubeConfigLoader()
	cfg, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, Target{}, errNoCluster()
		}
		return nil, Target{}, WithHints(fmt.Errorf("cannot load the kubeconfig: %w", err),
			"Check --kubeconfig and --context.")
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, Target{}, fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	if f.noServerConfigured(cfg.Host, raw.Clusters) {
		// cli-runtime falls back to http://localhost:8080 when nothing
		// names a server; the first command would only say "connection
		// refused".
		return nil, Target{}, errNoCluster()
	}
	target := Target{Context: f.Context, Project: f.Project}
	if target.Context == "" {
		target.Context = raw.CurrentContext
	}
	target.Namespace = f.Namespace
	if target.Namespace == "" {
		if ns, _, err := loader.Namespace(); err == nil && ns != "" {
			target.Namespace = ns
		} else {
			target.Namespace = DefaultNamespace
		}
	}
	return cfg, target, nil
}

// errNoCluster is the first-run error: nothing says which cluster to talk
// to.
func errNoCluster() error {
	return WithHints(noCluster{errors.New("no cluster to talk to: no kubeconfig, and datumctl did not run this command")},
		"Run `datumctl login`, then run it as `datumctl compute ...`,",
		"or pass --kubeconfig (compute-local up prints one).")
}

// noCluster marks the errors of a command line that names no project or
// cluster at all, which only --dry-run=client can do without.
type noCluster struct{ error }

func (e noCluster) Unwrap() error { return e.error }

// noServerConfigured reports whether nothing names an API server: host is
// client-go's default, the kubeconfig has no cluster, and neither --server
// nor $KUBERNETES_MASTER gives one (in a Pod, the in-cluster config does).
func (f *Factory) noServerConfigured(host string, clusters map[string]*clientcmdapi.Cluster) bool {
	if host != clientcmd.ClusterDefaults.Server || len(clusters) > 0 || f.getenv("KUBERNETES_MASTER") != "" {
		return false
	}
	cf := f.ConfigFlags()
	return cf.APIServer == nil || *cf.APIServer == ""
}

// getenv reads the environment through Getenv, or sees nothing.
func (f *Factory) getenv(key string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(key)
}

// CanPrompt reports whether the user can be asked: stdin is a terminal.
func (f *Factory) CanPrompt() bool { return f.Streams.InTerminal }

// Confirm asks question on stderr and reads a yes/no answer from stdin;
// an empty answer is no. --yes answers yes without asking. Ctrl-C while
// waiting for the answer returns ctx's cause.
func (f *Factory) Confirm(ctx context.Context, question string) (bool, error) {
	if f.Yes {
		return true, nil
	}
	_, _ = fmt.Fprintf(f.Streams.ErrOut, "%s [y/N]: ", question)
	if f.input == nil {
		f.input = bufio.NewReader(f.Streams.In)
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := f.input.ReadString('\n')
		ch <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		_, _ = fmt.Fprintln(f.Streams.ErrOut)
		return false, context.Cause(ctx)
	case a := <-ch:
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			return false, fmt.Errorf("cannot read the answer: %w", a.err)
		}
		switch strings.ToLower(strings.TrimSpace(a.line)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	}
}

// applyConnectionFlags applies the kubectl flags that make sense against
// the Datum project (--request-timeout, --as, --as-group, --as-uid) to cfg;
// the others name kubeconfig entries and apply in standalone mode only.
func applyConnectionFlags(cfg *rest.Config, cf *genericclioptions.ConfigFlags) error {
	if cf.Timeout != nil && *cf.Timeout != "" && *cf.Timeout != "0" {
		d, err := time.ParseDuration(*cf.Timeout)
		if err != nil {
			secs, serr := strconv.Atoi(*cf.Timeout)
			if serr != nil || secs < 0 {
				return UsageErrorf("--request-timeout %q: use a duration such as 30s or 1m", *cf.Timeout)
			}
			d = time.Duration(secs) * time.Second
		}
		cfg.Timeout = d
	}
	if cf.Impersonate != nil {
		cfg.Impersonate.UserName = *cf.Impersonate
	}
	if cf.ImpersonateUID != nil {
		cfg.Impersonate.UID = *cf.ImpersonateUID
	}
	if cf.ImpersonateGroup != nil {
		cfg.Impersonate.Groups = *cf.ImpersonateGroup
	}
	return nil
}
