// Package deploy implements `datumctl compute deploy`: create or update a
// workload from flags or a manifest, have the server default and check it
// in a dry run (its admission webhooks), show the plan, ask, apply, and
// wait for the rollout with live per-city progress.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/internal/cli/plan"
	"github.com/citycells/compute/internal/cli/wait"
	"github.com/citycells/compute/internal/revision"
)

// Options are the options of `deploy`.
type Options struct {
	// ProjectOptions are the project and -o: json or yaml print the
	// workload (with --dry-run, the workload that would be applied: a
	// manifest to keep).
	cmdutil.ProjectOptions

	// Name is the workload name (argument, manifest or derived from the
	// image).
	Name string
	// Filenames are -f: files of Workload manifests, one per YAML
	// document or List item, directories of them and "-" for stdin.
	Filenames []string
	// Recursive is -R: read the directories of Filenames with their
	// subdirectories.
	Recursive bool

	// Image is --image.
	Image string
	// CityValues are the raw --city values; Cities the parsed codes.
	CityValues []string
	Cities     []string
	// LocationValues are the raw --location values; Locations the parsed
	// names.
	LocationValues []string
	Locations      []string
	// LocationSelectorValues are the raw --location-selector values;
	// LocationSelector the parsed labels.
	LocationSelectorValues []string
	LocationSelector       map[string]string
	// Min and Max are --min and --max: instances per city.
	Min, Max int32
	// PortValues are the raw --port values; Ports the parsed ports.
	PortValues []string
	Ports      []Port
	// EnvValues are the raw --env values; Env the parsed changes.
	EnvValues []string
	Env       []EnvChange
	// EnvFromSecretValues and EnvFromConfigMapValues are the raw
	// --env-from-secret and --env-from-configmap values; EnvFrom the
	// parsed variables, secrets first.
	EnvFromSecretValues, EnvFromConfigMapValues []string
	EnvFrom                                     []EnvChange
	// EnvFromSecretAllValues and EnvFromConfigMapAllValues are the raw
	// --env-from-secret-all and --env-from-configmap-all values; EnvAll
	// the parsed changes, secrets first.
	EnvFromSecretAllValues, EnvFromConfigMapAllValues []string
	EnvAll                                            []EnvAllChange
	// MountSecretValues and MountConfigMapValues are the raw
	// --mount-secret and --mount-configmap values; Mounts the parsed
	// mounts, secrets first.
	MountSecretValues, MountConfigMapValues []string
	Mounts                                  []Mount
	// PullSecretValues are the raw --pull-secret values; PullSecrets the
	// parsed changes.
	PullSecretValues []string
	PullSecrets      []PullSecretChange
	// Command and Args are --command and --args, one token per flag.
	Command, Args []string
	// InstanceType is --instance-type.
	InstanceType string
	// Policy is --policy.
	Policy string
	// Placement is --placement.
	Placement string

	// DryRun is --dry-run: none, server (a bare --dry-run: stop after the
	// plan) or client (render the workload offline).
	DryRun string
	// Detach is --detach: do not wait for the rollout.
	Detach bool
	// WaitFlags hold --timeout: how long to wait for the rollout (unless
	// --detach).
	WaitFlags *cmdutil.WaitFlags

	// manifests are the Workloads read from Filenames and sources where
	// each was read; manifest is the one being deployed.
	manifests []*computev1alpha.Workload
	sources   []string
	manifest  *computev1alpha.Workload
	// changed records the workload flags given on the command line.
	changed changes
	// cause is the change cause recorded with the revision.
	cause string
	// namespaceFlag is set when -n/--namespace was given.
	namespaceFlag bool

	// namespace is the namespace to deploy to and existing the workload
	// of that name there (nil when there is none yet); Resolve sets both.
	namespace string
	existing  *computev1alpha.Workload
}

// NewCommand returns the deploy command.
func NewCommand(f *cmdutil.Factory) *cobra.Command { return cmdutil.CommandOf(newCommand(f)) }

// newCommand returns the command and the options it fills.
func newCommand(f *cmdutil.Factory) (*cobra.Command, *Options) {
	o := &Options{ProjectOptions: cmdutil.NewProjectOptions(f, cmdutil.NewObjectOutputFlags()),
		WaitFlags: cmdutil.NewWaitFlags(wait.DefaultTimeout)}
	cmd := cmdutil.Command(&cobra.Command{
		Use:               "deploy [NAME] (--image IMAGE --city CITIES [flags] | -f FILE)",
		Short:             "Create or update a workload and wait for it to roll out",
		Long:              deployLong,
		Example:           deployExample,
		Args:              cmdutil.MaximumArgs("NAME"),
		ValidArgsFunction: cmdutil.CompleteWorkloadNames(f),
	}, o, o.Output)
	o.addFlags(cmd, f)
	return cmd, o
}

// addFlags adds deploy's flags, filling o, to cmd, and their completions
// from f.
func (o *Options) addFlags(cmd *cobra.Command, f *cmdutil.Factory) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&o.Filenames, "filename", "f", nil,
		"Workload manifests (YAML or JSON) to apply, several separated by --- lines or in a List: a file, a directory "+
			"(its .yaml, .yml and .json files) or - for standard input (repeatable).")
	fl.BoolVarP(&o.Recursive, "recursive", "R", false, "Read the directories given with -f and their subdirectories.")
	fl.StringVar(&o.Image, "image", "", "Container image to run, e.g. ghcr.io/acme/web:1.2.")
	fl.StringSliceVar(&o.CityValues, "city", nil,
		"Cities to run in, e.g. DFW,LHR (comma-separated or repeated): every Location of the project in those cities.")
	fl.StringSliceVar(&o.LocationValues, "location", nil,
		"Locations to run in, by name, e.g. gcp-us-south1-a (comma-separated or repeated).")
	fl.StringSliceVar(&o.LocationSelectorValues, "location-selector", nil,
		"Run in every Location of the project whose topology matches, e.g. topology.datum.net/region=us-south (KEY=VALUE, comma-separated or repeated).")
	fl.Int32Var(&o.Min, "min", 1, "Instances per city.")
	fl.Int32Var(&o.Max, "max", 0, "Most instances per city (optional; at least --min).")
	// The repeatable flags, one value each time.
	for _, r := range []struct {
		into        *[]string
		name, usage string
	}{
		{&o.PortValues, "port", "A port the container listens on: [name:]port[/protocol], e.g. http:8080 (repeatable)."},
		{&o.EnvValues, "env", "An environment variable NAME=value, or NAME- to remove it (repeatable)."},
		{&o.EnvFromSecretValues, "env-from-secret", "An environment variable read from a Secret key: NAME=SECRET:KEY (repeatable; remove with --env NAME-)."},
		{&o.EnvFromConfigMapValues, "env-from-configmap", "An environment variable read from a ConfigMap key: NAME=CONFIGMAP:KEY (repeatable; remove with --env NAME-)."},
		{&o.EnvFromSecretAllValues, "env-from-secret-all", "A variable for every key of a Secret: SECRET or SECRET:PREFIX (names prefixed), SECRET- to stop (repeatable)."},
		{&o.EnvFromConfigMapAllValues, "env-from-configmap-all", "A variable for every key of a ConfigMap: CONFIGMAP or CONFIGMAP:PREFIX, CONFIGMAP- to stop (repeatable)."},
		{&o.MountSecretValues, "mount-secret", "Mount a Secret's keys as files: SECRET:PATH, or SECRET- to remove the mount (repeatable)."},
		{&o.MountConfigMapValues, "mount-configmap", "Mount a ConfigMap's keys as files: CONFIGMAP:PATH, or CONFIGMAP- to remove the mount (repeatable)."},
		{&o.PullSecretValues, "pull-secret", "A Secret holding registry credentials to pull the image with, or NAME- to stop using it (repeatable)."},
		{&o.Command, "command", "The command to run instead of the image's entrypoint, one token per flag (repeatable)."},
		{&o.Args, "args", "Arguments for the command, one per flag (repeatable)."},
	} {
		fl.StringArrayVar(r.into, r.name, nil, r.usage)
	}
	fl.StringVar(&o.InstanceType, "instance-type", "", "Instance type, e.g. "+DefaultInstanceTypeHint+".")
	fl.StringVar(&o.Policy, "policy", "", "Instance ordering: OrderedReady (default: one after another) or Parallel.")
	fl.StringVar(&o.Placement, "placement", "", "The placement to create or change (default \""+DefaultPlacement+"\").")
	fl.BoolVar(&o.Detach, "detach", false, "Return once applied, without waiting for the rollout.")
	o.WaitFlags.AddTimeoutFlag(cmd, "How long to wait for the rollout (exit 3 when it passes).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, "the plan")
	// deploy previews through the server: a bare --dry-run means server.
	fl.Lookup("dry-run").NoOptDefVal, fl.Lookup("dry-run").Usage = cmdutil.DryRunServer, "\"server\" (or a bare --dry-run) "+
		"shows the plan the server checked, storing nothing;\n\"client\" renders the workload offline: no request, no defaults, no checks."
	_ = cmd.RegisterFlagCompletionFunc("city", cmdutil.CompleteCities(f))
	_ = cmd.RegisterFlagCompletionFunc("instance-type", cmdutil.CompleteInstanceTypes(f))
	_ = cmd.RegisterFlagCompletionFunc("placement", cmdutil.CompletePlacements(f))
	_ = cmd.RegisterFlagCompletionFunc("policy", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"OrderedReady", "Parallel"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// deployLong is the deploy command's help.
const deployLong = "Deploy a container image to one or more cities, or apply a Workload manifest with -f.\n\n" +
	"deploy has the server check the workload in a dry run (its schema, admission and defaults; errors\n" +
	"name the flags), shows what it will create or change, asks for confirmation on a terminal (not\n" +
	"with -y, or when stdin is not a terminal), applies it and waits for the rollout with live per-city\n" +
	"progress. It stops early with exit 1 when an instance fails in a way waiting will not fix, with\n" +
	"exit 3 at --timeout, and on Ctrl-C with exit 130 — the rollout continues on the server.\n\n" +
	"When the workload exists, only the flags given change it: --image replaces the image, --city the\n" +
	"cities of the placement, --env NAME=value sets a variable (NAME- removes it), --port replaces the\n" +
	"ports. Without NAME the workload is named after the image. --detach returns once applied.\n\n" +
	"-f takes one Workload, or several: separated by --- lines, the items of a List, several -f, or a\n" +
	"directory's .yaml, .yml and .json files in name order (with -R, its subdirectories' too);\n" +
	"-f - reads standard input. Each is planned, confirmed, applied and rolled out in turn, and the\n" +
	"first that fails stops the command; errors name the file and the document.\n\n" +
	"Secrets and ConfigMaps of the project reach the container four ways, each flag repeatable:\n" +
	"--env-from-secret NAME=SECRET:KEY and --env-from-configmap NAME=CONFIGMAP:KEY set variable NAME\n" +
	"from a key (--env NAME- removes it, whatever its source); --env-from-secret-all SECRET[:PREFIX]\n" +
	"and --env-from-configmap-all CONFIGMAP[:PREFIX] set a variable for every key, named PREFIX and\n" +
	"the key (SECRET- or CONFIGMAP- stops); --mount-secret SECRET:PATH and\n" +
	"--mount-configmap CONFIGMAP:PATH mount every key as a file under PATH in a volume named\n" +
	"secret-SECRET or configmap-CONFIGMAP (SECRET- or CONFIGMAP- removes the mount and its volume; a\n" +
	"new PATH moves it); --pull-secret SECRET pulls the images with a registry Secret (SECRET- stops).\n" +
	"deploy names the objects, never their values; compute delivers them to the cities.\n\n" +
	"--dry-run (=server) stops after the plan; -o prints the server's answer. --dry-run=client sends\n" +
	"nothing and needs no cluster or login: it renders the workload of the flags (--image and --city)\n" +
	"or files as written."

// deployExample are the deploy command's examples.
const deployExample = "  # Two instances in DFW and LHR each\n" +
	"  datumctl compute deploy web --image ghcr.io/acme/web:1.2 --city DFW,LHR --min 2 --port http:8080\n\n" +
	"  # Roll out a new image\n" +
	"  datumctl compute deploy web --image ghcr.io/acme/web:1.3\n\n" +
	"  # Read a password from a Secret, mount a ConfigMap and pull from a private registry\n" +
	"  datumctl compute deploy web --env-from-secret DB_PASSWORD=db:password \\\n" +
	"    --mount-configmap web-config:/etc/web --pull-secret regcred\n\n" +
	"  # Apply a manifest without waiting\n" +
	"  datumctl compute deploy -f workload.yaml --detach\n\n" +
	"  # Apply every Workload of a multi-document file, read from standard input\n" +
	"  cat workloads.yaml | datumctl compute deploy -f - --yes\n\n" +
	"  # Apply the Workloads of a directory and its subdirectories\n" +
	"  datumctl compute deploy -f manifests/ -R"

// DefaultInstanceTypeHint is the instance type the flag help mentions.
const DefaultInstanceTypeHint = "datumcloud/d1-standard-2"

// Complete reads the arguments, the manifest and the flags given.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.changed = changesOf(cmd.Flags())
	o.namespaceFlag = cmd.Flags().Changed("namespace")
	if len(args) > 0 {
		o.Name = args[0]
	}
	var err error
	if o.Cities, err = ParseCities(o.CityValues); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	o.Locations = ParseLocations(o.LocationValues)
	if o.LocationSelector, err = ParseLocationSelector(o.LocationSelectorValues); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := parseEach(&o.Ports, o.PortValues, ParsePort); err != nil {
		return err
	}
	if err := parseEach(&o.Env, o.EnvValues, ParseEnv); err != nil {
		return err
	}
	if err := o.parseRefs(); err != nil {
		return err
	}
	if len(o.Filenames) > 0 {
		if err := o.readManifests(); err != nil {
			return err
		}
	} else {
		o.cause = strings.Join(append([]string{"deploy", o.Name}, changedFlags(cmd.Flags(),
			"yes", "dry-run", "detach", "timeout", "kubeconfig", "context", "namespace", "project")...), " ")
	}
	if o.Name == "" && o.manifest == nil && o.Image != "" {
		o.Name = nameFromImage(o.Image)
	}
	return nil
}

// readManifests reads the Workloads of -f.
func (o *Options) readManifests() error {
	ms, err := ManifestSource{Filenames: o.Filenames, Recursive: o.Recursive, In: o.Factory.Streams.In}.Read()
	if err != nil {
		return err
	}
	o.manifests, o.sources = make([]*computev1alpha.Workload, len(ms)), make([]string, len(ms))
	for i, m := range ms {
		o.manifests[i], o.sources[i] = m.Workload, m.Where
	}
	o.manifest = o.manifests[0]
	o.cause = "deploy -f " + strings.Join(o.Filenames, " -f ")
	if o.Recursive {
		o.cause += " -R"
	}
	return nil
}

// maxReplicas is the API's bound on minReplicas and maxReplicas.
const maxReplicas = 1000

// Validate checks the flags, without the server.
func (o *Options) Validate() error {
	if err := o.validateDryRun(); err != nil {
		return err
	}
	if len(o.Filenames) > 0 {
		if both := o.changed.flags(); len(both) > 0 {
			return cmdutil.UsageErrorf("-f cannot be combined with %s: put them in the manifest", strings.Join(both, ", "))
		}
		if o.Name != "" && len(o.manifests) > 1 {
			return cmdutil.UsageErrorf("NAME %q cannot pick one of the %d workloads of %s: deploy them all, or put one in its own file",
				o.Name, len(o.manifests), strings.Join(o.Filenames, ", "))
		}
		if o.Name != "" && o.Name != o.manifest.Name {
			return cmdutil.UsageErrorf("NAME %q differs from the manifest's metadata.name %q", o.Name, o.manifest.Name)
		}
		for i, m := range o.manifests {
			if m.Name == "" {
				return cmdutil.UsageErrorf("%s has no metadata.name: name the workload in the manifest", o.document(i))
			}
		}
	} else if o.Name == "" {
		return cmdutil.UsageErrorf("deploy needs a workload: give NAME and --image, or -f FILE")
	}
	if where := (o.changed & whereChanges).flags(); len(where) > 1 {
		return cmdutil.UsageErrorf("%s say where to run in different ways: give one of them", strings.Join(where, " and "))
	}
	if o.changed.has(changeMin) && (o.Min < 0 || o.Min > maxReplicas) {
		return cmdutil.UsageErrorf("--min must be between 0 and %d, got %d", maxReplicas, o.Min)
	}
	if o.changed.has(changeMax) && (o.Max < o.Min || o.Max > maxReplicas) {
		return cmdutil.UsageErrorf("--max must be between --min (%d) and %d, got %d", o.Min, maxReplicas, o.Max)
	}
	switch computev1alpha.InstanceManagementPolicyType(o.Policy) {
	case "", computev1alpha.OrderedReadyInstanceManagementPolicy, computev1alpha.ParallelInstanceManagementPolicy:
	default:
		return cmdutil.UsageErrorf("--policy %q: use OrderedReady or Parallel", o.Policy)
	}
	if err := o.WaitFlags.Validate(); err != nil {
		return err
	}
	return o.Output.Validate()
}

// validateDryRun checks --dry-run: client builds the workload offline, so
// without -f it needs every flag a new workload needs.
func (o *Options) validateDryRun() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if o.DryRun != cmdutil.DryRunClient || len(o.Filenames) > 0 || (o.Image != "" && o.changed.has(whereChanges)) {
		return nil
	}
	return cmdutil.UsageErrorf("--dry-run=client builds the workload from the flags alone, without reading it from the server: " +
		"give --image and --city (or --location, --location-selector), or -f; to preview a change, use --dry-run=server")
}

// workloadName is the name of the workload being deployed.
func (o *Options) workloadName() string {
	if o.manifest != nil {
		return o.manifest.Name
	}
	return o.Name
}

// Resolve connects to the project (ProjectRef.Resolve), chooses the
// namespace and reads the workload when it exists. With --dry-run=client
// it sends nothing and needs no kubeconfig (Factory.OfflineClients).
func (o *Options) Resolve(ctx context.Context) (err error) {
	if o.DryRun == cmdutil.DryRunClient {
		o.Clients, err = o.Factory.OfflineClients()
	} else {
		err = o.ProjectRef.Resolve(ctx)
	}
	if err != nil {
		return err
	}
	return o.resolveWorkload(ctx)
}

// resolveWorkload chooses the namespace of the workload being deployed
// and reads it when it exists (not with --dry-run=client).
func (o *Options) resolveWorkload(ctx context.Context) error {
	ns, err := o.chooseNamespace(o.Clients)
	if err != nil {
		return err
	}
	o.namespace, o.existing = ns, nil
	if o.DryRun == cmdutil.DryRunClient {
		return nil
	}
	name := o.workloadName()
	existing := &computev1alpha.Workload{}
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("cannot read workload %s: %w", name, err)
		}
		return nil
	}
	o.existing = existing
	return nil
}

// document names manifest i for messages: the file, and the document
// when it holds several.
func (o *Options) document(i int) string {
	return o.sources[i]
}

// Run deploys the workload, or each workload of the file in turn: plan,
// confirmation, apply and rollout one after the other, stopping at the
// first that fails (those before it stay deployed).
func (o *Options) Run(ctx context.Context) error {
	if len(o.manifests) <= 1 {
		return o.runOne(ctx)
	}
	out, _ := o.Factory.Human(o.Output)
	for i, m := range o.manifests {
		o.manifest = m
		_, _ = fmt.Fprintf(out, "==> Workload %d of %d: %s (%s)\n", i+1, len(o.manifests), m.Name, o.document(i))
		err := o.resolveWorkload(ctx)
		if err == nil {
			err = o.runOne(ctx)
		}
		if err != nil {
			switch {
			case i == 1:
				err = cmdutil.WithHints(err, "Document 1 was deployed; fix this one and run the command again (a deployed workload shows no change).")
			case i > 1:
				err = cmdutil.WithHints(err, fmt.Sprintf("Documents 1 to %d were deployed; fix this one and run the command again (a deployed workload shows no change).", i))
			}
			return fmt.Errorf("%s, workload %s: %w", o.document(i), m.Name, err)
		}
		if i < len(o.manifests)-1 {
			_, _ = fmt.Fprintln(out)
		}
	}
	return nil
}

// runOne deploys the workload of the flags or of o.manifest: the server
// defaults and checks it in a dry run, the plan compares its answer with
// the stored workload, and unless --dry-run it is written and followed.
// --dry-run=client only renders the workload built from the flags or the
// manifest, offline.
func (o *Options) runOne(ctx context.Context) error {
	f, c := o.Factory, o.Clients
	built, err := o.desired(o.existing, o.namespace)
	if err != nil {
		return err
	}
	out, terminal := f.Human(o.Output)
	if o.DryRun == cmdutil.DryRunClient {
		RenderOffline(out, built, c.Target)
		return f.DryRunDone(out, o.DryRun, o.Output, built, c.Scheme)
	}
	checked, err := o.write(ctx, built, cmdutil.DryRunServer)
	if err != nil {
		return err
	}
	var before *computev1alpha.WorkloadSpec
	if o.existing != nil {
		before = &o.existing.Spec
	}
	p := plan.Compute(before, &checked.Spec)
	if p.Empty() {
		_, _ = fmt.Fprintf(out, "%s is up to date: nothing to deploy.\n", built.Name)
		_, _ = fmt.Fprintf(out, "See its state with: %s\n", f.Cmd("status %s", built.Name))
		return f.PrintResult(o.Output, o.existing, c.Scheme)
	}
	RenderPlan(out, checked, c.Target, p)
	if o.DryRun == cmdutil.DryRunServer {
		return f.DryRunDone(out, o.DryRun, o.Output, checked, c.Scheme)
	}
	if !f.Yes && f.CanPrompt() {
		ok, err := f.Confirm(ctx, "Deploy?")
		if err != nil {
			return err
		}
		if !ok {
			return cmdutil.Failf("deploy cancelled: nothing was changed")
		}
	}
	if _, err := o.write(ctx, built, cmdutil.DryRunNone); err != nil {
		return err
	}
	ns, name := o.namespace, built.Name
	if o.Detach {
		_, _ = fmt.Fprintf(out, "Deployed %s. Watch the rollout with: %s\n", name, f.Cmd("rollout status %s", name))
	} else {
		pr, err := wait.Wait(ctx, f, c.Client, wait.Options{Name: name, Namespace: ns, Timeout: o.WaitFlags.Timeout, Out: out, Terminal: terminal})
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, wait.RolledOut(pr))
	}
	if o.Output.IsTable() {
		return nil
	}
	w := &computev1alpha.Workload{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		return f.WorkloadError(err, ns, name)
	}
	return f.PrintResult(o.Output, w, c.Scheme)
}

// chooseNamespace returns the namespace to deploy to: the manifest's,
// unless -n says otherwise.
func (o *Options) chooseNamespace(c *cmdutil.Clients) (string, error) {
	if o.manifest == nil || o.manifest.Namespace == "" {
		return c.Namespace, nil
	}
	if o.namespaceFlag && o.manifest.Namespace != c.Namespace {
		return "", cmdutil.UsageErrorf("the manifest is for namespace %s but --namespace says %s", o.manifest.Namespace, c.Namespace)
	}
	return o.manifest.Namespace, nil
}

// write sends built, the workload of the flags or the manifest: a create,
// or a replacement of the existing workload's spec guarded by the
// generation it was read at (status writes by controllers do not
// interfere; a concurrent spec change does). With dryRun server the
// server's admission defaults and checks it and nothing is stored. It
// returns the server's answer.
func (o *Options) write(ctx context.Context, built *computev1alpha.Workload, dryRun string) (*computev1alpha.Workload, error) {
	c, desired := o.Clients, built.DeepCopy()
	annotations := map[string]string{revision.ChangeCauseAnnotation: o.cause}
	if o.existing == nil {
		desired.Annotations = merge(desired.Annotations, annotations)
		if err := c.Client.Create(ctx, desired, cmdutil.CreateOptions(dryRun)...); err != nil {
			return nil, o.writeError(ctx, err, desired.Name)
		}
		return desired, nil
	}
	var labels map[string]string
	if o.manifest != nil {
		annotations = merge(o.manifest.Annotations, annotations)
		labels = o.manifest.Labels
	}
	current := o.existing.DeepCopy()
	var p cmdutil.JSONPatch
	p.GuardGeneration(current.Generation)
	p.Replace("/spec", desired.Spec)
	p.SetMapEntries("/metadata/annotations", current.Annotations, annotations)
	p.SetMapEntries("/metadata/labels", current.Labels, labels)
	if err := p.Apply(ctx, c.Client, current, cmdutil.PatchOptions(dryRun)...); err != nil {
		return nil, o.writeError(ctx, err, desired.Name)
	}
	if o.changed.has(changeMin) && dryRun == cmdutil.DryRunNone {
		var placements []string
		for _, pl := range desired.Spec.Placements {
			placements = append(placements, pl.Name)
		}
		if _, err := cmdutil.ClearReplicaOverrides(ctx, c, o.existing, placements, cmdutil.DryRunNone); err != nil {
			return nil, err
		}
	}
	return current, nil
}

// writeError explains a failed write: the server's field errors name the
// flags that set the fields when the workload came from flags.
func (o *Options) writeError(ctx context.Context, err error, name string) error {
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, cmdutil.ErrChanged) || apierrors.IsAlreadyExists(err):
		return cmdutil.WithHints(fmt.Errorf("workload %s was changed by someone else while deploying; nothing was applied", name),
			"Run the command again to see the new plan.")
	case apierrors.IsInvalid(err) && errors.As(err, &status):
		return o.invalid(ctx, name, status.Status())
	case apierrors.IsForbidden(err):
		return cmdutil.WithHints(fmt.Errorf("you may not deploy %s: %w", name, err), "Ask a project owner for access to compute.")
	}
	return fmt.Errorf("cannot deploy %s: %w", name, err)
}

// invalid explains the server's refusal of workload name: every field
// error at once, named by flag when the workload came from flags, and the
// project's instance types when one of them is about the instance type.
func (o *Options) invalid(ctx context.Context, name string, st metav1.Status) error {
	var causes []metav1.StatusCause
	if st.Details != nil {
		causes = st.Details.Causes
	}
	if len(causes) == 0 {
		return cmdutil.Failf("the server rejected workload %s:\n  %s", name, st.Message)
	}
	var hints []string
	if slices.ContainsFunc(causes, func(c metav1.StatusCause) bool { return strings.Contains(c.Field, "instanceType") }) {
		if types, err := catalog.Load(ctx, o.Clients.Client); err == nil {
			hints = append(hints, "Instance types: "+strings.Join(types.Names(), ", ")+" (datumctl-compute instance-types).")
		}
	}
	return cmdutil.WithHints(cmdutil.Failf("workload %s is not valid:\n%s", name, describeCauses(causes, o.flagOf)), hints...)
}

// flagOf names the flag that set the field at path (flagOf), nil for a
// manifest: its errors name fields.
func (o *Options) flagOf(path string) string {
	if o.manifest != nil {
		return ""
	}
	if strings.Contains(path, ".locationSelector") && o.changed.has(changeCity) {
		return "--city"
	}
	return flagOf(path)
}
