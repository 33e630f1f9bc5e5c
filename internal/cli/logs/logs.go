// Package logs implements `datumctl compute logs WORKLOAD|INSTANCE`: an
// Instance's container logs, or every Instance's of a Workload interleaved
// line by line with a prefix per instance ([instance] line), with kubectl's
// flags (-f, --tail, --since, --previous, --timestamps, -c, --max-log-requests)
// and --city.
//
// The logs come from the project plane's debug API
// (/apis/debug.compute.datumapis.com/v1alpha/namespaces/NS/instances/NAME/log,
// internal/debugapi), authorized with the user's own identity (get
// instances/log); the CLI never holds a credential of a cell.
//
// A follow survives an Instance being replaced: when a stream ends the
// CLI looks again, follows the new Instance (or the new container of the
// same one) and says so on stderr; with a Workload, Instances that appear
// are followed too, up to --max-log-requests.
package logs

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/cli/cmdutil"
)

// DefaultMaxLogRequests is --max-log-requests' default, kubectl's.
const DefaultMaxLogRequests = 5

// logPath is the debug API's path of an Instance's log.
func logPath(namespace, name string) string {
	return fmt.Sprintf("/apis/debug.compute.datumapis.com/v1alpha/namespaces/%s/instances/%s/log", namespace, name)
}

// Options are the options of `logs`.
type Options struct {
	cmdutil.CityFlag
	// Factory connects to the project.
	Factory *cmdutil.Factory
	// Name is the Workload or Instance.
	Name string
	// Follow is -f/--follow.
	Follow bool
	// Tail is --tail: the last lines of each instance; -1 for all.
	Tail int64
	// Since is --since: only lines newer than this.
	Since time.Duration
	// Previous is --previous: the previous container's lines.
	Previous bool
	// Timestamps is --timestamps.
	Timestamps bool
	// Container is -c/--container.
	Container string
	// Prefix is --prefix: prefix each line with [instance] (the default
	// for a Workload).
	Prefix bool
	// MaxLogRequests is --max-log-requests: how many instances may be
	// followed at once.
	MaxLogRequests int
	// Retry is how long a follow waits before looking again for an
	// instance whose stream ended.
	Retry time.Duration

	clients *cmdutil.Clients
	source  source
}

// NewCommand returns the logs command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{Factory: f, Tail: -1, MaxLogRequests: DefaultMaxLogRequests, Retry: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "logs WORKLOAD|INSTANCE",
		Short: "Print the logs of an instance, or of every instance of a workload",
		Long: "Print a container's logs: of one instance, or of every instance of a workload, interleaved line by\n" +
			"line with the instance's name as a prefix ([web-dfw-0] ...). The logs are read through the project with\n" +
			"your own rights (get instances/log, which the project's view and edit roles grant).\n\n" +
			"With --follow the command keeps streaming; when an instance is replaced (a restart, a rollout) it follows\n" +
			"the new one and says so on stderr. A city whose cell cannot be reached fails at once, naming the city.",
		Example: "  datumctl compute logs web\n  datumctl compute logs web -f --tail 20 --city DFW\n" +
			"  datumctl compute logs web-dfw-0 --previous\n  datumctl compute logs web --since 10m --timestamps",
		Args:              cmdutil.ExactArgs("WORKLOAD|INSTANCE"),
		ValidArgsFunction: cmdutil.CompleteWorkloadNames(f),
	}
	cmd.RunE = cmdutil.RunE(o)
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "Keep streaming new lines.")
	fl.Int64Var(&o.Tail, "tail", o.Tail, "Lines of recent log to show per instance; -1 shows all.")
	fl.DurationVar(&o.Since, "since", 0, "Only show lines newer than this duration (5s, 2m, 3h).")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "Show the previous container's logs (after a restart or a crash).")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "Start each line with its RFC 3339 timestamp.")
	fl.StringVarP(&o.Container, "container", "c", "", "The container to read; the instance's first when empty.")
	fl.BoolVar(&o.Prefix, "prefix", false, "Prefix each line with [instance] (always on for a workload).")
	fl.IntVar(&o.MaxLogRequests, "max-log-requests", o.MaxLogRequests, "How many instances may be followed at once.")
	o.AddCityFlag(cmd, f, "Only the instances in this city (a city code such as DFW).")
	return cmd, o
}

// Complete takes the name and normalises the city.
func (o *Options) Complete(_ *cobra.Command, args []string) error {
	o.CompleteCity()
	if len(args) > 0 {
		o.Name = args[0]
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if err := o.ValidateCity(); err != nil {
		return err
	}
	switch {
	case o.Tail < -1:
		return cmdutil.UsageErrorf("--tail must be -1 (all) or more, got %d", o.Tail)
	case o.Since < 0:
		return cmdutil.UsageErrorf("--since must be positive, got %s", o.Since)
	case o.MaxLogRequests < 1:
		return cmdutil.UsageErrorf("--max-log-requests must be at least 1, got %d", o.MaxLogRequests)
	case o.Previous && o.Follow:
		return cmdutil.UsageErrorf("--previous and --follow cannot be combined: a previous container writes no more")
	}
	return nil
}

// Run prints the logs.
func (o *Options) Run(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	targets, workload, err := o.resolve(ctx)
	if err != nil {
		return err
	}
	if workload != "" {
		o.Prefix = true
	}
	if len(targets) == 0 {
		_, _ = fmt.Fprintf(o.Factory.Streams.ErrOut, "No instances of workload %q%s yet.\n", workload, o.cityText())
		if !o.Follow {
			return nil
		}
	}
	if o.Follow && len(targets) > o.MaxLogRequests {
		return cmdutil.WithHints(cmdutil.UsageErrorf(
			"you are attempting to follow %d log streams, but the maximum allowed concurrency is %d", len(targets), o.MaxLogRequests),
			"Use --max-log-requests to raise the limit, or --city to follow one city.")
	}
	return newStreamer(o, workload).run(ctx, targets)
}

// connect builds the clients and the log source.
func (o *Options) connect() error {
	if o.source != nil {
		return nil
	}
	c, err := o.Factory.Clients()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("cannot create a client for %s: %w", c.Target, err)
	}
	o.clients = c
	o.source = &apiSource{c: c.Client, rest: cs.CoreV1().RESTClient(), namespace: c.Namespace, city: o.City}
	return nil
}

// resolve finds the instances to read: the Workload's, or the one
// Instance so named.
func (o *Options) resolve(ctx context.Context) ([]instanceRef, string, error) {
	isWorkload, err := o.source.isWorkload(ctx, o.Name)
	if err != nil {
		return nil, "", err
	}
	if isWorkload {
		refs, err := o.source.instances(ctx, o.Name)
		return refs, o.Name, err
	}
	ref, found, err := o.source.instance(ctx, o.Name)
	switch {
	case err != nil:
		return nil, "", err
	case !found:
		return nil, "", cmdutil.WithHints(cmdutil.Failf("no workload or instance named %q in namespace %q", o.Name, o.namespace()),
			o.Factory.Cmd("workloads")+" lists the workloads; "+o.Factory.Cmd("instances NAME")+" a workload's instances.")
	case o.City != "" && ref.city != o.City:
		return nil, "", cmdutil.UsageErrorf("instance %q runs in %s, not %s", o.Name, ref.city, o.City)
	}
	return []instanceRef{ref}, "", nil
}

// namespace is the namespace the command reads, for messages.
func (o *Options) namespace() string {
	if o.clients == nil {
		return ""
	}
	return o.clients.Namespace
}

// cityText is " in CITY" with --city.
func (o *Options) cityText() string {
	if o.City == "" {
		return ""
	}
	return " in " + o.City
}

// isNotFound reports whether err is a NotFound.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// instanceRef is one Instance being read: its name, city and source UID
// (the cell Instance it mirrors, which a replacement changes).
type instanceRef struct {
	name, city, uid string
}

// refOf returns the instanceRef of a project Instance.
func refOf(inst *computev1alpha.Instance) instanceRef {
	uid := inst.Annotations[computev1alpha.SourceUIDAnnotation]
	if uid == "" {
		uid = string(inst.UID)
	}
	return instanceRef{name: inst.Name, city: inst.Labels[computev1alpha.CityCodeLabel], uid: uid}
}

// logRequest is what one stream asks for.
type logRequest struct {
	follow, previous, timestamps bool
	tail                         int64
	since                        time.Duration
	sinceTime                    time.Time
	container                    string
}

// source is where instances and their logs come from: the project (and
// its debug API), or a fake in tests.
type source interface {
	isWorkload(ctx context.Context, name string) (bool, error)
	instances(ctx context.Context, workload string) ([]instanceRef, error)
	instance(ctx context.Context, name string) (instanceRef, bool, error)
	open(ctx context.Context, name string, req logRequest) (io.ReadCloser, error)
}

// apiClient is the subset of the client the source uses.
type apiClient interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}
